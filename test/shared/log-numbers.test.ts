// Fax numbers reach the log cut to their last four digits (src/log/logger.ts): who faxed which
// practice is the office's, and whoever reads the host's log need not learn it. Secrets stay
// censored whole. Driven through the real logger into a stream, as the daemon writes.
import { Writable } from "node:stream";
import { expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";

function logged(write: (log: ReturnType<typeof createLogger>) => void): Array<Record<string, unknown>> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  write(createLogger({ destination: destination as never }));
  return lines
    .join("")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

it("cuts numbers to their last four digits wherever the gateway logs one", () => {
  const err = new Error("send to +15551234567 failed");
  const [sent, rcpt, reply, failed, error, nested, mail, range] = logged((log) => {
    log.info({ to: "+15551230400", messageId: "m-1" }, "SENT");
    log.info({ rcpt: "15551234567@fax.example.com" }, "RCPT");
    log.info(
      { reply: "553 5.1.3 Destination not allowed <19005550123@fax.example.com>: +19005550123 is premium" },
      "REJECTED",
    );
    log.warn({ reason: "+15551234567 is blocked until 2026-11-29", to: "+44 20 7946 0958" }, "FAILED");
    log.error({ err }, "could not send");
    log.info({ job: { to: "+15551230401", apiKey: "k-1" }, numbers: ["+15551230402"] }, "nested");
    log.info({ to: "alice@example.com" }, "NOTIFIED");
    log.info({ from: "2026-11-01", to: "2026-11-29" }, "export");
  });
  expect(sent).toMatchObject({ to: "+*******0400", messageId: "m-1" });
  expect(rcpt).toMatchObject({ rcpt: "*******4567@fax.example.com" });
  expect(reply?.reply).toBe("553 5.1.3 Destination not allowed <*******0123@fax.example.com>: +*******0123 is premium");
  expect(failed).toMatchObject({ reason: "+*******4567 is blocked until 2026-11-29", to: "+** ** **** 0958" });
  expect(JSON.stringify(error)).not.toContain("15551234567");
  expect((error as { err: { message: string } }).err.message).toBe("send to +*******4567 failed");
  expect(err.message).toBe("send to +15551234567 failed"); // the caller's error keeps its words
  expect(nested).toMatchObject({ job: { to: "+*******0401", apiKey: "[redacted]" }, numbers: ["+*******0402"] });
  expect(mail).toMatchObject({ to: "alice@example.com" });
  expect(range).toMatchObject({ from: "2026-11-01", to: "2026-11-29" });
});

it("cuts a number in the message pino takes from an error when the line has none", () => {
  const err = new Error("send to +15551234567 failed");
  const plain = { message: "553 <19005550123@fax.example.com> refused" };
  const lines = logged((log) => {
    log.error(err);
    log.warn({ err });
    log.warn({ err: plain, job: "j-1" });
    log.error(err, "could not send");
    log.warn({ err, msg: "own message" });
    log.warn({ err: { message: { to: "+15551234567", token: "session-secret-1" } } });
  });
  expect(lines.map((l) => l.msg)).toEqual([
    "send to +*******4567 failed",
    "send to +*******4567 failed",
    "553 <*******0123@fax.example.com> refused",
    "could not send",
    "own message",
    { to: "+*******4567", token: "[redacted]" },
  ]);
  expect(JSON.stringify(lines.slice(0, -1))).not.toMatch(/1555123|1900555/);
});
