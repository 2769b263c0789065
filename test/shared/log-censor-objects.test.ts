// The log's censoring (src/log/logger.ts) of objects that are not plain: a copy made to censor
// one of their fields must still be written, and still censored. A URL or a class with #private
// fields throws from its toJSON on a copy of its own kind; pino would then write
// "[unable to serialize ...]" in place of the line (or, for a URL, the copy itself threw).
import { expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";

function capture() {
  const lines: string[] = [];
  const log = createLogger({ destination: { write: (line: string) => void lines.push(line) }, level: "info" });
  const last = () => JSON.parse(lines.at(-1)!) as Record<string, unknown>;
  return { log, lines, last };
}

class SecretUrl extends URL {
  override password = "hunter2";
}

class Vault {
  #key = "k-1";
  token = "session-secret-1";
  note = "kept";
  toJSON() {
    return { key: this.#key, token: this.token, note: this.note };
  }
}

/** A toJSON of public fields only: works on a copy, so the line writes through it as before. */
class Shaped {
  token = "session-secret-1";
  to = "+15551234567";
  toJSON() {
    return { shaped: true, token: this.token, to: this.to };
  }
}

it("writes a URL with an own secret field as a plain object of its fields, censored", () => {
  const { log, lines, last } = capture();
  const url = new SecretUrl("https://example.com/path");
  log.info({ target: url, job: { target: url } }, "a url");
  expect(lines.join("")).not.toContain("hunter2");
  expect(lines.join("")).not.toContain("unable to serialize");
  expect(last()).toMatchObject({ target: { password: "[redacted]" }, job: { target: { password: "[redacted]" } } });
  expect(url.password).toBe("hunter2");
});

it("writes a class with #private fields and a toJSON as a plain object of its fields, censored", () => {
  const { log, lines, last } = capture();
  const vault = new Vault();
  log.info({ vault }, "a vault");
  expect(lines.join("")).not.toContain("session-secret-1");
  expect(lines.join("")).not.toContain("unable to serialize");
  expect(last().vault).toEqual({ token: "[redacted]", note: "kept" });
  expect(vault.token).toBe("session-secret-1");
});

it("writes a Date with an own secret field, censored", () => {
  const { log, lines, last } = capture();
  const when = Object.assign(new Date(0), { token: "session-secret-1" });
  log.info({ when }, "a date");
  expect(lines.join("")).not.toContain("session-secret-1");
  expect(last().when).toEqual({ token: "[redacted]" });
});

it("keeps writing through a toJSON that works on the copy, with the censored fields", () => {
  const { log, last } = capture();
  log.info({ shaped: new Shaped() }, "shaped");
  expect(last().shaped).toEqual({ shaped: true, token: "[redacted]", to: "+*******4567" });
});
