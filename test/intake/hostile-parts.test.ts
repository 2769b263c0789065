// Regressions found by the fuzz run (test/faults/fuzz.test.ts): messages that used to crash the
// process from inside mailparser's data handler.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseMail } from '../../src/intake/mail-parse.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'faxgate-hostile-parts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('hostile MIME parts', () => {
  it('an attachment with an empty Content-Type header is parsed (as octet-stream), not a crash', async () => {
    const file = path.join(dir, 'empty-ct.eml');
    writeFileSync(
      file,
      [
        'From: alice@example.com', 'To: 15551234567@fax.example.com', 'Subject: x', 'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="m"', '', '--m', 'Content-Type: ', 'Content-Transfer-Encoding: base64', 'text/plain', '',
        'T3JkZXI=', '--m', 'Content-Type: application/pdf; name="order.pdf"', 'Content-Disposition: attachment; filename="order.pdf"', '',
        '%PDF-1.4', '--m--', '',
      ].join('\r\n'),
    );
    const parsed = await parseMail(file, dir);
    expect(parsed.parts.map((p) => p.contentType)).toContain('application/pdf');
    for (const p of parsed.parts) expect(typeof p.contentType).toBe('string');
  });
});
