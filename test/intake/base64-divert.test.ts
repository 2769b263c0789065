// Base64 bodies decoded around mailparser (src/intake/base64-divert.ts) must give exactly what
// mailparser alone gives for the same bytes: every message here is parsed both ways, the stored
// file through parseMail (mailparser alone) and the arriving bytes through startMailParse, fed in
// chunks of many sizes, and compared part by part, file contents included. The shortcut may give
// up (null: the caller parses the file again), never give a different answer.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_PENDING_DIVERSIONS } from '../../src/intake/base64-divert.js';
import { WorkDir } from '../../src/intake/incoming-file.js';
import { parseMail, startMailParse, type ParsedMail } from '../../src/intake/mail-parse.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'divert-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

function shape(p: ParsedMail): unknown {
  return {
    subject: p.subject,
    text: p.text,
    html: p.html,
    from: p.from,
    parts: p.parts.map((x) => {
      // a part of a small mail is held in memory (data), others are files
      const content = x.data ?? readFileSync(x.path);
      return { filename: x.filename, contentType: x.contentType, bytes: x.bytes, inline: x.inline, sha: createHash('sha256').update(content).digest('hex'), head: x.head ? Buffer.from(x.head).equals(content.subarray(0, 4096)) : null };
    }),
  };
}

/** Parsed both ways; the arriving bytes cut at `cuts` (sizes, repeated). */
async function both(message: string | Buffer, cuts: number[] = [65536]): Promise<{ fast: ParsedMail | null; reference: ParsedMail; diverted: boolean }> {
  const dir = path.join(root, String(n++));
  mkdirSync(path.join(dir, 'ref'), { recursive: true });
  const bytes = Buffer.isBuffer(message) ? message : Buffer.from(message, 'latin1');
  writeFileSync(path.join(dir, 'message.eml'), bytes);
  const reference = await parseMail(path.join(dir, 'message.eml'), path.join(dir, 'ref'));
  const parse = startMailParse(WorkDir.forMessage(dir));
  let k = 0;
  for (let o = 0; o < bytes.length; ) {
    const size = Math.max(1, cuts[k++ % cuts.length]!);
    if (!parse.input.write(bytes.subarray(o, o + size))) await new Promise((r) => parse.input.once('drain', r));
    o += size;
  }
  parse.input.end();
  const fast = await parse.done;
  return { fast, reference, diverted: fast !== null && fast.parts.some((p) => path.basename(p.path).startsWith('diverted-')) };
}

const b64 = (data: Buffer, width = 76, eol = '\r\n'): string => (data.toString('base64').match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join(eol);
const pdf = (size: number, seed = 1): Buffer => {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return Buffer.concat([Buffer.from('%PDF-1.4\n'), b, Buffer.from('\n%%EOF\n')]);
};

function mail(parts: string[], { eol = '\r\n', boundary = 'B', epilogue = '' } = {}): string {
  const body = parts.map((p) => `--${boundary}${eol}${p}${eol}`).join('');
  return [`From: alice@example.com`, `To: 15551234567@fax.example.com`, `Subject: divert`, `MIME-Version: 1.0`, `Content-Type: multipart/mixed; boundary="${boundary}"`, '', `preamble`, `${body}--${boundary}--`, epilogue].join(eol);
}
const attachment = (data: Buffer, { name = 'doc.pdf', type = 'application/pdf', eol = '\r\n', width = 76, cte = 'base64' } = {}): string =>
  [`Content-Type: ${type}; name="${name}"`, `Content-Disposition: attachment; filename="${name}"`, `Content-Transfer-Encoding: ${cte}`, '', b64(data, width, eol)].join(eol);
const textPart = (text: string, eol = '\r\n'): string => ['Content-Type: text/plain; charset=utf-8', '', text].join(eol);

async function same(message: string, opts: { diverted?: boolean; cuts?: number[] } = {}): Promise<void> {
  for (const cuts of opts.cuts ? [opts.cuts] : [[65536], [1000, 7, 64], [3], [4096, 1]]) {
    const r = await both(message, cuts);
    if (opts.diverted !== undefined) expect(r.diverted, `diverted with cuts ${cuts.join(',')}`).toBe(opts.diverted);
    if (r.fast !== null) expect(shape(r.fast), `cuts ${cuts.join(',')}`).toEqual(shape(r.reference));
  }
}

describe('base64 bodies decoded around mailparser', () => {
  it('an attachment is decoded into its own file, byte for byte what mailparser decodes', async () => {
    await same(mail([textPart('hello'), attachment(pdf(73_000))]), { diverted: true });
  });

  it('whatever the length of the last line, its padding and the line ends', async () => {
    // a body of one padded line is left to mailparser whole (nothing before its "=" to take)
    for (const size of [0, 1, 2, 3, 56, 57, 58, 1000]) await same(mail([textPart('x'), attachment(pdf(size))]), { diverted: size >= 56 ? true : undefined, cuts: [997, 13] });
    await same(mail([attachment(pdf(5000), { eol: '\n' })], { eol: '\n' }), { diverted: true });
    await same(mail([attachment(pdf(5000), { width: 77 })]), { diverted: true });
    await same(mail([attachment(pdf(5000), { width: 3 })]), { diverted: true, cuts: [511] });
  });

  it('several attachments, nested multiparts, and the type in capitals', async () => {
    const alt = ['Content-Type: multipart/alternative; boundary=ALT', '', '--ALT', textPart('plain'), '--ALT', 'Content-Type: text/html', '', '<p>html</p>', '--ALT--'].join('\r\n');
    await same(mail([alt, attachment(pdf(3000, 2), { name: 'a.pdf' }), attachment(pdf(9000, 3), { name: 'b.tif', type: 'image/tiff', cte: 'BASE64' })]), { diverted: true });
  });

  it('text parts, quoted-printable and forwarded messages are left to mailparser', async () => {
    const textB64 = ['Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64', '', b64(Buffer.from('héllo '.repeat(100)))].join('\r\n');
    await same(mail([textB64]), { diverted: false });
    const qp = ['Content-Type: application/pdf; name=q.pdf', 'Content-Transfer-Encoding: quoted-printable', '', '%PDF-1.4=0Ahello=0A%%EOF'].join('\r\n');
    await same(mail([qp]), { diverted: false });
    const inner = mail([textPart('inner'), attachment(pdf(2000, 4), { name: 'inner.pdf' })], { boundary: 'IN' });
    await same(mail([textPart('outer'), ['Content-Type: message/rfc822', 'Content-Disposition: attachment', '', inner].join('\r\n')]));
  });

  it('a body that stops being base64 halfway is still decoded the way mailparser decodes it', async () => {
    const data = b64(pdf(4000, 5)).split('\r\n');
    for (const odd of ['QUJD.RA==', 'QUJD RA', 'QQ==', '=', '-', '--B', '  ', '']) {
      const lines = [...data];
      lines.splice(20, 0, odd);
      await same(mail([['Content-Type: application/pdf; name=o.pdf', 'Content-Transfer-Encoding: base64', '', lines.join('\r\n')].join('\r\n')]));
    }
  });

  it('a byte that is not a letter inside a taken line gives the shortcut up: the message is parsed again', async () => {
    const data = b64(pdf(4000, 5)).split('\r\n');
    for (const odd of [' ', '.', '\r', '\x00', '\xe9']) {
      const lines = [...data];
      lines[20] = `${lines[20]!.slice(0, 30)}${odd}${lines[20]!.slice(30)}`;
      const message = mail([['Content-Type: application/pdf; name=o.pdf', 'Content-Transfer-Encoding: base64', '', lines.join('\r\n')].join('\r\n')]);
      for (const cuts of [[65536], [1000, 7, 64]]) expect((await both(message, cuts)).fast, `${JSON.stringify(odd)}, cuts ${cuts.join(',')}`).toBeNull();
    }
  });

  it('a delimiter in the epilogue, a message cut short, and no closing delimiter at all', async () => {
    const part = attachment(pdf(3000, 6));
    // after "--B--" a "--B" line means nothing to mailparser, and nothing here either (no re-parse)
    await same(mail([part], { epilogue: `--B\r\n${attachment(pdf(500, 7), { name: 'late.pdf' })}\r\n` }), { diverted: true });
    const whole = mail([textPart('t'), part]);
    await same(whole.slice(0, whole.indexOf('--B--')));
    await same(whole.slice(0, whole.length - 4000));
  });

  it('a message of many small base64 parts holds few files open at once, and parses as mailparser does', async () => {
    const parts = Array.from({ length: 300 }, (_, k) => attachment(pdf(1500, k), { name: `p${k}.pdf` }));
    const message = mail(parts);
    const fds = (): number => readdirSync('/proc/self/fd').length;
    const before = fds();
    let most = before;
    const sampler = setInterval(() => {
      most = Math.max(most, fds());
    }, 1);
    try {
      const r = await both(message, [65536]);
      expect(r.diverted).toBe(true);
      expect(shape(r.fast!)).toEqual(shape(r.reference));
    } finally {
      clearInterval(sampler);
    }
    // the bodies waiting for mailparser's claim, mailparser's own part file, and some slack for
    // what else the process opens meanwhile; a file per part would be 300
    expect(MAX_PENDING_DIVERSIONS).toBeLessThan(10);
    expect(most - before).toBeLessThan(30);
  });

  it('deep nesting and a boundary too long to be a delimiter are left to mailparser, with the same result', async () => {
    let nested = attachment(pdf(800, 11));
    for (let d = 0; d < 20; d++) nested = [`Content-Type: multipart/mixed; boundary="N${d}"`, '', `--N${d}`, nested, `--N${d}--`].join('\r\n');
    await same(mail([nested]), { diverted: false });
    const long = 'L'.repeat(2000);
    await same(mail([attachment(pdf(800, 12))], { boundary: long }), { diverted: false });
  });

  it('every message of the MIME corpora and the mail fixtures parses the same both ways', async () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(dir, e.name));
        else if (!e.name.endsWith('.md')) files.push(path.join(dir, e.name));
      }
    };
    for (const d of ['mime-corpus', 'mail']) walk(path.join(__dirname, '..', 'fixtures', d));
    let diverted = 0;
    for (const f of files) {
      const bytes = readFileSync(f);
      for (const cuts of [[65536], [777, 5]]) {
        const r = await both(bytes, cuts).catch((err: Error) => err);
        if (r instanceof Error) {
          // refused: by both, or this comparison fails
          const dir = mkdtempSync(path.join(root, 'refused-'));
          mkdirSync(path.join(dir, 'ref'));
          await expect(parseMail(f, path.join(dir, 'ref')), `${f}: mailparser alone`).rejects.toThrow();
          const parse = startMailParse(WorkDir.forMessage(dir));
          parse.input.end(bytes);
          await expect(parse.done, `${f}: the shortcut`).rejects.toThrow();
          continue;
        }
        if (r.diverted) diverted++;
        if (r.fast !== null) expect(shape(r.fast), `${f} cut ${cuts.join(',')}`).toEqual(shape(r.reference));
      }
    }
    // the comparison was made on real bodies taken around the parser, not only on ordinary parses
    expect(diverted).toBeGreaterThan(10);
  });

  // DIVERT_SEED and DIVERT_N run other and more damage (6,000 messages over four seeds agreed)
  it('random damage to a message never makes the two disagree', async () => {
    const base = mail([textPart('hello'), attachment(pdf(6000, 8)), attachment(pdf(2000, 9), { name: 'two.pdf' })]);
    let seed = Number(process.env.DIVERT_SEED ?? 42);
    const rand = (k: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % k;
    };
    const bits = ['-', '--B', '\r\n', '\n', '=', ' ', 'A', '\r\n\r\n', '--B--', 'Content-Type: text/plain\r\n', '\r'];
    let fastCount = 0;
    for (let t = 0; t < Number(process.env.DIVERT_N ?? 90); t++) {
      let m = base;
      for (let e = 0, edits = 1 + rand(3); e < edits; e++) {
        const at = rand(m.length);
        const kind = rand(3);
        // a piece put in, bytes taken out, or a byte replaced (the line keeps its length)
        if (kind === 0) m = m.slice(0, at) + bits[rand(bits.length)] + m.slice(at);
        else if (kind === 1) m = m.slice(0, at) + m.slice(at + 1 + rand(5));
        else m = m.slice(0, at) + '-= .*\r\n'[rand(7)] + m.slice(at + 1);
      }
      const r = await both(m, [1 + rand(5000), 1 + rand(70)]);
      if (r.fast !== null) {
        fastCount++;
        expect(shape(r.fast), `damaged message ${t}`).toEqual(shape(r.reference));
      }
    }
    // most damage leaves the shortcut usable: the comparison above was made, not skipped
    expect(fastCount).toBeGreaterThan(Number(process.env.DIVERT_N ?? 90) / 2);
  });
});
