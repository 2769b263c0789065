// A forwarded message with nothing attached (Groupwise forwards this way, and so does "forward as
// attachment" of a plain mail) used to vanish from the parts without a trace: the sender was told
// the mail had "no attachment and no text". Found by the public MIME corpus run (CPython msg_46).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseMail } from '../../src/intake/mail-parse.js';
import { mailToJob } from '../../src/intake/mail-to-job.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'faxgate-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const inner = 'From: "Dr. Sender" <sender@example.net>\r\nSubject: GroupwiseForwardingTest\r\nContent-Type: text/plain\r\n\r\nTesting email forwarding\r\n';

async function parse(message: string) {
  const file = path.join(dir, 'message.eml');
  writeFileSync(file, message);
  return { file, parsed: await parseMail(file, dir) };
}

describe('a forwarded message with nothing attached', () => {
  it('stays a part of its own, so it is left out with a reason', async () => {
    const { file, parsed } = await parse(`From: alice@example.com\r\nSubject: fwd\r\nMIME-Version: 1.0\r\nContent-Type: message/rfc822\r\n\r\n${inner}`);
    expect(parsed.parts.map((p) => p.contentType)).toEqual(['message/rfc822']);
    const err = await mailToJob({
      parsed, user: 'alice', envelopeFrom: 'alice@example.com', recipients: [{ address: 'x', number: '+15551234567' }],
      coverPreference: false, timezone: async () => 'UTC', inlineImageMinBytes: 0, original: { path: file, sha256: 'x' }, now: 0,
    }).catch((e: unknown) => e as { smtpReply?: string });
    expect((err as { smtpReply?: string }).smtpReply).toMatch(/^554 5\.6\.0 Nothing to fax: no attachment can be faxed: .*rfc822/);
  });

  it('beside a PDF is named among the parts left out', async () => {
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n').toString('base64');
    const { file, parsed } = await parse(
      'From: alice@example.com\r\nSubject: two\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n' +
        `--B\r\nContent-Type: application/pdf; name=a.pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${pdf}\r\n` +
        `--B\r\nContent-Type: message/rfc822\r\nContent-Disposition: attachment\r\n\r\n${inner}--B--\r\n`,
    );
    const job = await mailToJob({
      parsed, user: 'alice', envelopeFrom: 'alice@example.com', recipients: [{ address: 'x', number: '+15551234567' }],
      coverPreference: false, timezone: async () => 'UTC', inlineImageMinBytes: 0, original: { path: file, sha256: 'x' }, now: 0,
    });
    expect(job.documents.map((d) => d.name)).toEqual(['a.pdf']);
    expect(job.meta?.leftOut?.map((l) => l.reason)).toEqual([expect.stringMatching(/message\/rfc822/)]);
  });
});
