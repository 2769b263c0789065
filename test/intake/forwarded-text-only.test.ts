// A forwarded message with nothing attached (Groupwise forwards this way, and so does "forward as
// attachment" of a plain mail) used to vanish from the parts without a trace: the sender was told
// the mail had "no attachment and no text". Found by the public MIME corpus run (CPython msg_46).
// What the sender wants faxed is that mail itself: it becomes a text page.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseMail } from "../../src/intake/mail/mail-parse.js";
import { mailToJob } from "../../src/intake/mail/mail-to-job.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
beforeEach(() => {
  dir = tempFolder("test");
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const inner =
  'From: "Dr. Sender" <sender@example.net>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\nSubject: GroupwiseForwardingTest\r\nContent-Type: text/plain\r\n\r\nTesting email forwarding\r\n';

async function parse(message: string) {
  const file = path.join(dir, "message.eml");
  writeFileSync(file, message);
  return { file, parsed: await parseMail(file, dir) };
}

const job = (parsed: Awaited<ReturnType<typeof parse>>["parsed"], file: string) =>
  mailToJob({
    parsed,
    user: "alice",
    envelopeFrom: "alice@example.com",
    recipients: [{ address: "x", number: "+15551234567" }],
    coverPreference: false,
    timezone: async () => "UTC",
    inlineImageMinBytes: 0,
    original: { path: file, sha256: "x" },
    now: 0,
  });

describe("a forwarded message with nothing attached", () => {
  it("is faxed as a text page with its From, Date and Subject", async () => {
    const { file, parsed } = await parse(
      `From: alice@example.com\r\nSubject: fwd\r\nMIME-Version: 1.0\r\nContent-Type: message/rfc822\r\n\r\n${inner}`,
    );
    expect(parsed.parts.map((p) => [p.contentType, p.filename])).toEqual([
      ["text/plain", "GroupwiseForwardingTest.txt"],
    ]);
    const j = await job(parsed, file);
    expect(j.documents.map((d) => d.name)).toEqual(["GroupwiseForwardingTest.txt"]);
    expect(readFileSync(j.documents[0]!.path, "utf8")).toBe(
      "From: Dr. Sender <sender@example.net>\nDate: Mon, 02 Nov 2026 10:00:00 GMT\nSubject: GroupwiseForwardingTest\n\nTesting email forwarding\n",
    );
  });

  it("beside a PDF comes after it, in message order", async () => {
    const pdf = Buffer.from("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n").toString("base64");
    const { file, parsed } = await parse(
      "From: alice@example.com\r\nSubject: two\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n" +
        `--B\r\nContent-Type: application/pdf; name=a.pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${pdf}\r\n` +
        `--B\r\nContent-Type: message/rfc822\r\nContent-Disposition: attachment\r\n\r\n${inner}--B--\r\n`,
    );
    expect((await job(parsed, file)).documents.map((d) => d.name)).toEqual(["a.pdf", "GroupwiseForwardingTest.txt"]);
  });

  it("with no text either stays a part of its own, left out with a reason", async () => {
    const empty = "From: sender@example.net\r\nSubject: empty\r\nContent-Type: text/plain\r\n\r\n\r\n";
    const { file, parsed } = await parse(
      `From: alice@example.com\r\nSubject: fwd\r\nMIME-Version: 1.0\r\nContent-Type: message/rfc822\r\n\r\n${empty}`,
    );
    expect(parsed.parts.map((p) => p.contentType)).toEqual(["message/rfc822"]);
    const err = await job(parsed, file).catch((e: unknown) => e as { smtpReply?: string });
    expect((err as { smtpReply?: string }).smtpReply).toMatch(
      /^554 5\.6\.0 Nothing to fax: no attachment can be faxed: .*rfc822/,
    );
  });
});
