import { describe, expect, it } from "vitest";
import { FaxgateError } from "../../src/errors.js";
import { replyFor } from "../../src/smtp/smtp-reply.js";

function sysError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: something`), { code });
}

describe("replyFor", () => {
  it("says 452 4.3.1 for a full disk, however deep the cause", () => {
    expect(replyFor(sysError("ENOSPC"))).toMatch(/^452 4\.3\.1 /);
    expect(
      replyFor(
        new FaxgateError("STORE_UNAVAILABLE", "the job could not be stored", {
          cause: sysError("SQLITE_FULL"),
          temporary: true,
        }),
      ),
    ).toMatch(/^452 4\.3\.1 /);
    const wrapped = new FaxgateError("STORE_UNAVAILABLE", "outer", {
      cause: new Error("middle", { cause: sysError("EDQUOT") }),
      temporary: true,
    });
    expect(replyFor(wrapped)).toMatch(/^452 4\.3\.1 /);
  });

  it("says 451 4.3.0 for other trouble of ours, never a 5xx", () => {
    expect(replyFor(sysError("EROFS"))).toMatch(/^451 4\.3\.0 /);
    expect(replyFor(new FaxgateError("STORE_UNAVAILABLE", "x", { cause: sysError("EIO"), temporary: true }))).toMatch(
      /^451 4\.3\.0 .*STORE_UNAVAILABLE/,
    );
    expect(replyFor("weird")).toMatch(/^451 4\.3\.0 /);
  });
});

describe("the error catalogue decides the reply", () => {
  it("every code: the input is answered with its own reply; ours and the service never with a 5xx", async () => {
    const { ERROR_CATALOGUE } = await import("../../src/errors.js");
    for (const [code, kind] of Object.entries(ERROR_CATALOGUE)) {
      const reply = replyFor(new FaxgateError(code as keyof typeof ERROR_CATALOGUE, "what happened"));
      if (kind.fault === "input") expect(reply, code).toBe(`${kind.smtp} what happened`);
      else expect(reply, code).toMatch(/^4\d\d 4\.\d+\.\d+ /);
      expect(new FaxgateError(code as keyof typeof ERROR_CATALOGUE, "x").temporary, code).toBe(kind.temporary);
    }
  });

  it("a 5xx written into an error of ours is not sent: our fault is never permanent for the client", () => {
    expect(replyFor(new FaxgateError("STORE_UNAVAILABLE", "x", { smtpReply: "554 5.0.0 nope" }))).toMatch(
      /^451 4\.3\.0 /,
    );
  });

  it("errno names are ours, look-alike codes (mailsplit EMAXLEN) are not", async () => {
    const { isSystemError } = await import("../../src/errors.js");
    expect(isSystemError(sysError("ENOSPC"))).toBe(true);
    expect(isSystemError(sysError("EIO"))).toBe(true);
    expect(isSystemError(sysError("SQLITE_BUSY"))).toBe(true);
    expect(isSystemError(sysError("EMAXLEN"))).toBe(false);
    expect(isSystemError(new Error("plain"))).toBe(false);
  });
});
