// How much of a message mailparser takes in ahead of the attachment it is writing. Each message on
// its way in holds that much, times the sessions, so it is bounded: one chunk waiting in each of
// mailsplit's two object-mode streams, not their default of 16 (src/intake/mail-parse.ts, holdOneChunk).
import { once } from 'node:events';
import { expect, it } from 'vitest';
import type { AttachmentStream, MessageText } from 'mailparser';
import { newMailParser } from '../../src/intake/mail-parse.js';

it('while an attachment is not read, the parser takes in well under a megabyte more, then pushes back', async () => {
  const parser = newMailParser();
  let attachment: AttachmentStream | null = null;
  // the attachment is seen and never read: everything behind it has to wait
  parser.on('data', (d: AttachmentStream | MessageText) => {
    if (d.type === 'attachment') attachment = d;
  });
  parser.write(
    ['From: a@example.com', 'Content-Type: multipart/mixed; boundary=B', '', '--B', 'Content-Type: application/pdf', 'Content-Transfer-Encoding: base64', '', ''].join('\r\n'),
  );
  // 64 KB chunks of base64 lines, as a socket hands them over
  const chunk = Buffer.from(`${'QUJD'.repeat(19)}\r\n`.repeat(840));
  let taken = 0;
  for (let i = 0; i < 100; i++) {
    taken += chunk.length;
    if (parser.write(chunk)) continue;
    // pushed back: go on only if it drains (it does while the splitter still has room)
    const drained = await Promise.race([once(parser, 'drain').then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);
    if (!drained) break;
  }
  expect(attachment).not.toBeNull();
  // 100 chunks would be 6.4 MB: the parser stopped taking them
  expect(taken).toBeLessThan(50 * chunk.length);
  console.log(`taken in ahead of an unread attachment: ${(taken / 1024).toFixed(0)} KB`);
  // 448 KB when this was written; with mailsplit's defaults 3.3 MB, and 1.3 MB with only its
  // first stream held to one chunk
  expect(taken).toBeLessThan(700 * 1024);
  parser.destroy();
});
