// Regressions found by the fuzz run (test/faults/fuzz.test.ts): messages that used to crash the
// process from inside mailparser's data handler.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseMail } from "../../src/intake/mail/mail-parse.js";
import { tempFolder } from "../tmp-dir.js";

const dir = tempFolder("hostile-parts");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("hostile MIME parts", () => {
  it("an attachment with an empty Content-Type header is parsed (as octet-stream), not a crash", async () => {
    const file = path.join(dir, "empty-ct.eml");
    writeFileSync(
      file,
      [
        "From: alice@example.com",
        "To: 15551234567@fax.example.com",
        "Subject: x",
        "MIME-Version: 1.0",
        'Content-Type: multipart/mixed; boundary="m"',
        "",
        "--m",
        "Content-Type: ",
        "Content-Transfer-Encoding: base64",
        "text/plain",
        "",
        "T3JkZXI=",
        "--m",
        'Content-Type: application/pdf; name="order.pdf"',
        'Content-Disposition: attachment; filename="order.pdf"',
        "",
        "%PDF-1.4",
        "--m--",
        "",
      ].join("\r\n"),
    );
    const parsed = await parseMail(file, dir);
    expect(parsed.parts.map((p) => p.contentType)).toContain("application/pdf");
    for (const p of parsed.parts) expect(typeof p.contentType).toBe("string");
  });

  it("a part file that cannot be written (a full disk) fails the parse, and no rejection goes unhandled meanwhile", async () => {
    const sub = mkdtempSync(path.join(dir, "unwritable-"));
    // the first part's file name is taken by a folder: its write fails at once, while the parser
    // still has the rest of the message to read
    mkdirSync(path.join(sub, "part-000"));
    const file = path.join(dir, "two-parts.eml");
    const pdf = Buffer.alloc(200_000, 0x41).toString("base64").replace(/.{76}/g, "$&\r\n");
    writeFileSync(
      file,
      [
        "From: alice@example.com",
        "To: 15551234567@fax.example.com",
        "Subject: x",
        "MIME-Version: 1.0",
        'Content-Type: multipart/mixed; boundary="m"',
        "",
        "--m",
        'Content-Type: application/pdf; name="a.pdf"',
        "Content-Transfer-Encoding: base64",
        "",
        pdf,
        "--m",
        'Content-Type: application/pdf; name="b.pdf"',
        "Content-Transfer-Encoding: base64",
        "",
        pdf,
        "--m--",
        "",
      ].join("\r\n"),
    );
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    // vitest's own listener would fail the run; this one counts
    const others = process.listeners("unhandledRejection");
    process.removeAllListeners("unhandledRejection");
    process.on("unhandledRejection", onUnhandled);
    try {
      await expect(parseMail(file, sub)).rejects.toThrow(/EISDIR/);
      // fixed wait on purpose: negative check: no unhandled rejection follows
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off("unhandledRejection", onUnhandled);
      for (const l of others) process.on("unhandledRejection", l);
    }
    expect(unhandled).toEqual([]);
  });
});
