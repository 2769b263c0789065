// src/smtp/data-scan.ts replaces smtp-server's byte-by-byte search for the end of the data with a
// native one. Here both functions take the same SMTP input, cut into chunks every way that
// matters (one byte at a time, every split in two, random sizes), and what comes out (the
// commands, each message's data after unstuffing) must be the same, and right.
import { SMTPStream } from 'smtp-server/lib/smtp-stream.js';
import { describe, expect, it } from 'vitest';
import { fastFeedDataStream, installDataScan, originalFeedDataStream } from '../../src/smtp/data-scan.js';

type Feed = typeof originalFeedDataStream;

/** Feeds `chunks` through an SMTPStream whose data-mode function is `feed`; what it reported, in order. */
async function run(feed: Feed, chunks: Buffer[]): Promise<string[]> {
  const s = new SMTPStream();
  s._feedDataStream = feed;
  const out: string[] = [];
  s.oncommand = (command: Buffer, next?: () => void): void => {
    const line = command.toString('latin1');
    out.push(`command ${line}`);
    if (line === 'DATA') {
      const data = s.startDataMode();
      const parts: Buffer[] = [];
      data.on('data', (b: Buffer) => parts.push(b));
      data.on('end', () => {
        out.push(`data ${JSON.stringify(Buffer.concat(parts).toString('latin1'))}`);
        s.continue();
      });
    }
    next?.();
  };
  for (const c of chunks) await new Promise<void>((resolve, reject) => s.write(c, (err) => (err ? reject(err) : resolve())));
  await new Promise<void>((resolve) => s.end(resolve));
  return out;
}

const SESSION = (body: string): Buffer => Buffer.from(`MAIL FROM:<a@b>\r\nDATA\r\n${body}\r\n.\r\nQUIT\r\n`, 'latin1');

const BODIES = [
  'Subject: x\r\n\r\nplain text',
  '..starts with an escaped dot\r\nand more',
  '.\r\n.. the first line is a lone dot, escaped',
  'line\r\n..\r\n...three\r\n.x not stuffed\r\nend',
  'bare\n..lf\n.\nlines',
  '\r\n\r\n..\r\n',
  'QUIT\r\n.a\r\n..\r\n.\r',
  'x'.repeat(300) + '\r\n..' + 'y'.repeat(200),
];

function splits(input: Buffer): Buffer[][] {
  const ways: Buffer[][] = [[input], [...input].map((b) => Buffer.from([b]))];
  for (let at = 1; at < input.length; at++) ways.push([input.subarray(0, at), input.subarray(at)]);
  let seed = 7;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let k = 0; k < 20; k++) {
    const parts: Buffer[] = [];
    for (let at = 0; at < input.length; ) {
      const size = 1 + random(9);
      parts.push(input.subarray(at, at + size));
      at += size;
    }
    ways.push(parts);
  }
  return ways;
}

describe('the native search for the end of the data (data-scan.ts)', () => {
  it('reports what smtp-server reports, for every chunking', async () => {
    expect(fastFeedDataStream).not.toBe(originalFeedDataStream);
    let compared = 0;
    for (const body of BODIES) {
      const input = SESSION(body);
      const expected = await run(originalFeedDataStream, [input]);
      for (const chunks of splits(input)) {
        expect(await run(originalFeedDataStream, chunks)).toEqual(expected);
        expect(await run(fastFeedDataStream, chunks)).toEqual(expected);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it('unstuffs dots and stops at the terminator', async () => {
    const out = await run(fastFeedDataStream, [SESSION('line\r\n..\r\n...three\r\n.x\r\nend')]);
    expect(out).toEqual(['command MAIL FROM:<a@b>', 'command DATA', `data ${JSON.stringify('line\r\n.\r\n..three\r\n.x\r\nend\r\n')}`, 'command QUIT']);
  });

  it('is the one SMTP sessions use once installed', () => {
    installDataScan();
    expect(SMTPStream.prototype._feedDataStream).toBe(fastFeedDataStream);
  });
});
