// How many turns of the event loop a mail's parse takes after its last byte. On a receiver busy
// with 20 sessions a turn lasts about a millisecond, and mailparser took two turns for each object
// of mailsplit's and one more for each stretch of a base64 body: a mail waited 11 to 16 ms for its
// parse (src/intake/mail-parse.ts, parseWithoutWaiting). If a later mailparser changes the insides
// that this relies on, the parse is mailparser's own again, and the first check here fails.
import { expect, it } from 'vitest';
import type { AttachmentStream, MessageText } from 'mailparser';
import { MailParser } from 'mailparser';
import { newMailParser, OBJECTS_PER_TURN } from '../../src/intake/mail-parse.js';

const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(20_000, 0x20), Buffer.from('\n%%EOF\n')]);
const MAIL = Buffer.from(
  [
    'From: clerk@example.com', 'To: 15551234567@fax.example.com', 'Subject: turns', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary=B', '',
    '--B', 'Content-Type: text/plain', '', 'Please fax this.', '',
    '--B', 'Content-Type: application/pdf; name=a.pdf', 'Content-Disposition: attachment; filename=a.pdf', 'Content-Transfer-Encoding: base64', '',
    PDF.toString('base64').replace(/.{76}/g, '$&\r\n'),
    '--B', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64', 'Content-Disposition: attachment; filename=notes.txt', '',
    Buffer.from('second part\r\n').toString('base64'),
    '--B--', '',
  ].join('\r\n'),
);

/** `input` written whole, then the turns of the event loop until the parser's end. */
async function turnsUntilEnd(parser: MailParser, input: Buffer): Promise<number> {
  let turns = 0;
  let ended = false;
  const count = (): void => {
    if (ended) return;
    turns += 1;
    setImmediate(count);
  };
  const end = new Promise<void>((resolve, reject) => {
    parser.once('end', () => {
      ended = true;
      resolve();
    });
    parser.once('error', reject);
  });
  parser.end(input);
  setImmediate(count);
  await end;
  return turns;
}

interface Parsed {
  turns: number;
  text: string;
  parts: Array<{ name: string | undefined; bytes: number }>;
}

/** The whole mail written at once: what the parser made of it, and the turns until its end. */
async function parse(parser: MailParser): Promise<Parsed> {
  const parts: Parsed['parts'] = [];
  let text = '';
  parser.on('data', (d: AttachmentStream | MessageText) => {
    if (d.type === 'text') {
      text = d.text ?? '';
      return;
    }
    const chunks: Buffer[] = [];
    d.content.on('data', (c: Buffer) => chunks.push(c));
    d.content.on('end', () => {
      parts.push({ name: d.filename, bytes: Buffer.concat(chunks).length });
      d.release?.();
    });
  });
  const turns = await turnsUntilEnd(parser, MAIL);
  return { turns, text, parts };
}

it('a mail of a text and two attachments is parsed within a few turns of its last byte, to the same result as mailparser alone', async () => {
  const ours = await parse(newMailParser());
  const plain = await parse(new MailParser({ skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true, skipHtmlToText: true, checksumAlgo: false }));
  console.log(`turns after the last byte: ${ours.turns} (mailparser alone: ${plain.turns})`);
  expect(ours.text).toBe(plain.text);
  expect(ours.text.trim()).toBe('Please fax this.');
  expect(ours.parts).toEqual(plain.parts);
  expect(ours.parts).toEqual([{ name: 'a.pdf', bytes: PDF.length }, { name: 'notes.txt', bytes: 13 }]);
  // 5 when this was written, against 26 for mailparser alone
  expect(ours.turns).toBeLessThanOrEqual(8);
  expect(plain.turns).toBeGreaterThan(2 * ours.turns);
});

it('a mail of many parts still gives the event loop its turns while it is parsed', async () => {
  // text parts shown inline: nothing waits for a release, so only the budget a turn yields
  const many = 3 * OBJECTS_PER_TURN;
  const body = [
    'From: clerk@example.com', 'Content-Type: multipart/mixed; boundary=B', '',
    ...Array.from({ length: many }, (_, i) => `--B\r\nContent-Type: text/plain\r\n\r\npart ${i}`),
    '--B--', '',
  ].join('\r\n');
  const parser = newMailParser();
  let text = '';
  parser.on('data', (d: AttachmentStream | MessageText) => {
    if (d.type === 'text') text = d.text ?? '';
  });
  const turns = await turnsUntilEnd(parser, Buffer.from(body));
  expect(text).toContain(`part ${many - 1}`);
  // three objects a part (its headers, its body, what follows it), OBJECTS_PER_TURN a turn at most
  console.log(`turns for ${many} inline parts: ${turns}`);
  expect(turns).toBeGreaterThanOrEqual(Math.floor((3 * many) / OBJECTS_PER_TURN));
});
