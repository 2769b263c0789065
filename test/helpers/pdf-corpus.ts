// PDFs made by real generators, for the '@' pre-check's differential test against pdfjs
// (test/intake/pdf-at-signs.test.ts): pdf-lib in-process, then LibreOffice and Chromium, then
// rewrites of their output by pdftocairo (what CUPS produces), qpdf and Ghostscript. Each tool
// is optional; `TOOLS` says which are here, and the test skips the groups of the missing ones.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PDFDocument, StandardFonts, type PDFFont, type PDFPage } from '@cantoo/pdf-lib';
import { findExecutable } from '../../src/intake/office-convert.js';
import { incrementalUpdate, streamBody, toUnicodeCMap } from './pdf-craft.js';
import { benchLetter } from './pdf-letter.js';

export interface CorpusFile {
  group: string;
  name: string;
  data: Buffer;
}

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? '/usr/bin/chromium';
const DEJAVU = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

/** fontkit, for embedding a TrueType font with pdf-lib, when some package already installed it. */
function findFontkit(): string | null {
  const require = createRequire(import.meta.url);
  for (const name of ['@pdf-lib/fontkit', '@cantoo/fontkit']) {
    try {
      return require.resolve(name);
    } catch {
      // not installed
    }
  }
  return null;
}

export const TOOLS = {
  soffice: findExecutable('soffice'),
  chromium: existsSync(CHROMIUM) ? CHROMIUM : null,
  pdftocairo: findExecutable('pdftocairo'),
  qpdf: findExecutable('qpdf'),
  gs: findExecutable('gs'),
  ps2pdf: findExecutable('ps2pdf'),
  fontkit: existsSync(DEJAVU) ? findFontkit() : null,
};
export type Tool = keyof typeof TOOLS;

export const MISSING: Record<Tool, string> = {
  soffice: 'soffice (LibreOffice) is not installed (apt-get install libreoffice-writer-nogui)',
  chromium: `no chromium at ${CHROMIUM} (apt-get install chromium, or set FAXGATE_CHROMIUM)`,
  pdftocairo: 'pdftocairo is not installed (apt-get install poppler-utils)',
  qpdf: 'qpdf is not installed (apt-get install qpdf)',
  gs: 'gs (Ghostscript) is not installed (apt-get install ghostscript)',
  ps2pdf: 'ps2pdf is not installed (apt-get install ghostscript)',
  fontkit: `no fontkit package in node_modules (or no ${DEJAVU}): pdf-lib cannot embed a TrueType font`,
};

function run(cmd: string, args: string[], timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 4 << 20 }, (err, _out, stderr) => {
      if (err) reject(new Error(`${path.basename(cmd)} ${args.join(' ')}: ${err.message}\n${String(stderr).slice(0, 500)}`));
      else resolve();
    });
  });
}

/** Runs the jobs, at most `width` at a time (two cores, shared). */
async function limited<T>(jobs: (() => Promise<T>)[], width = 2): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

// ---- pdf-lib


/** A pdf-lib document: one entry of `pages` per page, each a list of lines. */
async function pdfLibDoc(pages: string[][], o: { font?: StandardFonts; objectStreams?: boolean; pieces?: boolean } = {}): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(o.font ?? StandardFonts.Helvetica);
  for (const lines of pages) drawLines(doc.addPage([612, 792]), font, lines, o.pieces);
  return Buffer.from(await doc.save({ useObjectStreams: o.objectStreams ?? true }));
}

/** Lines top-down; `pieces` draws each line a few characters per drawText call, side by side. */
function drawLines(page: PDFPage, font: PDFFont, lines: string[], pieces = false): void {
  lines.forEach((line, l) => {
    const y = 740 - l * 18;
    if (!pieces) return page.drawText(line, { x: 50, y, size: 11, font });
    let x = 50;
    for (let i = 0; i < line.length; i += 3) {
      const piece = line.slice(i, i + 3);
      page.drawText(piece, { x, y, size: 11, font });
      x += font.widthOfTextAtSize(piece, 11);
    }
  });
}

const LETTER = ['Dear customer,', 'please find the invoice attached.', 'Questions: billing@example.com', 'Kind regards'];
const AT_LINES = (n: number) => [`This line has ${n} at signs: ${'@'.repeat(n)}`, ...LETTER.slice(0, 2)];
const CODE = '@@FAX 15551234567@@';

async function pdfLibCorpus(): Promise<CorpusFile[]> {
  const out: CorpusFile[] = [];
  const add = (name: string, data: Buffer) => out.push({ group: 'pdf-lib', name, data });
  const bench = await benchLetter();
  add('bench-letter', bench(1));
  add('letter-one-email', await pdfLibDoc([['Dear Bob,', 'write to me at alice@example.com', 'Alice']]));
  const fonts: [string, StandardFonts][] = [
    ['helvetica', StandardFonts.Helvetica],
    ['times', StandardFonts.TimesRoman],
    ['courier', StandardFonts.Courier],
    ['helvetica-bold', StandardFonts.HelveticaBold],
    ['courier-oblique', StandardFonts.CourierOblique],
  ];
  for (const [fname, font] of fonts) {
    for (const n of [0, 1, 2, 3, 4, 7]) add(`${fname}-${n}-at`, await pdfLibDoc([AT_LINES(n)], { font }));
    add(`${fname}-code`, await pdfLibDoc([[...LETTER, CODE, '@@SUBJECT Invoice 42@@']], { font }));
  }
  // Symbol and ZapfDingbats cannot encode '@': their own characters only
  add('symbol', await pdfLibDoc([['αβγδ ∀∃ ∑ ≅ ∠'], ['πρστ']], { font: StandardFonts.Symbol }));
  add('zapfdingbats', await pdfLibDoc([['✓✔✕ ✁✂ ❶❷']], { font: StandardFonts.ZapfDingbats }));
  for (const objectStreams of [true, false]) {
    const os = objectStreams ? 'objstm' : 'no-objstm';
    add(`code-${os}`, await pdfLibDoc([[...LETTER, CODE]], { objectStreams }));
    add(`email-${os}`, await pdfLibDoc([LETTER], { objectStreams }));
    add(`code-in-pieces-${os}`, await pdfLibDoc([[...LETTER, CODE]], { objectStreams, pieces: true }));
    add(`code-page-2-${os}`, await pdfLibDoc([LETTER, [CODE], ['the end']], { objectStreams }));
    const many = Array.from({ length: 55 }, (_, i) => (i === 50 ? [CODE] : [`page ${i + 1}`, 'nothing here']));
    add(`code-page-51-${os}`, await pdfLibDoc(many, { objectStreams }));
    add(`emails-55-pages-${os}`, await pdfLibDoc(Array.from({ length: 55 }, (_, i) => [`page ${i + 1}`, `mail p${i}@example.com`]), { objectStreams }));
  }
  add('forms', await embeddedPages());
  if (TOOLS.fontkit) add('dejavu-ttf', await ttfDoc(TOOLS.fontkit));
  return out;
}

/** The text lives in form XObjects: pages of one document drawn into another. */
async function embeddedPages(): Promise<Buffer> {
  const src = await PDFDocument.create();
  const font = await src.embedFont(StandardFonts.Helvetica);
  drawLines(src.addPage([612, 792]), font, [...LETTER, CODE]);
  drawLines(src.addPage([612, 792]), font, ['second source page, no at signs']);
  const doc = await PDFDocument.create();
  const [a, b] = await doc.embedPages(src.getPages());
  const page = doc.addPage([612, 792]);
  page.drawPage(a!, { x: 0, y: 396, xScale: 0.5, yScale: 0.5 });
  page.drawPage(b!, { x: 306, y: 396, xScale: 0.5, yScale: 0.5 });
  page.drawPage(a!, { x: 0, y: 0, xScale: 0.5, yScale: 0.5 });
  doc.addPage([612, 792]).drawPage(b!);
  return Buffer.from(await doc.save());
}

async function ttfDoc(fontkitPath: string): Promise<Buffer> {
  const fontkit = (await import(fontkitPath)) as { default?: unknown };
  const doc = await PDFDocument.create();
  doc.registerFontkit((fontkit.default ?? fontkit) as Parameters<PDFDocument['registerFontkit']>[0]);
  const font = await doc.embedFont(readFileSync(DEJAVU), { subset: true });
  drawLines(doc.addPage([612, 792]), font, [...LETTER, CODE, 'fullwidth ＠ and small ﹫']);
  return Buffer.from(await doc.save());
}

// ---- LibreOffice and Chromium

const HTML = `<!doctype html><html><head><meta charset="utf-8"><title>Invoice</title></head><body>
<h1>Invoice 42</h1>
<p>@@FAX 15551234567@@</p>
<p>Split over markup: @@<b>FAX</b> <i>1555</i>7654321@@</p>
<table border="1"><tr><td>billing@example.com</td><td>sales@example.org</td></tr></table>
<p>Fullwidth ＠ and small ﹫ at signs, and a mailto <a href="mailto:x@example.com">link</a>.</p>
<p style="font-family: monospace">@@SUBJECT monospace subject@@</p>
</body></html>`;

const TXT = `Dear customer,\n\nplease fax this to the number below.\n@@FAX +1 555 123 4567@@\n@@COVER on@@\n\nReply to billing@example.com or sales@example.org.\n`;

const TXT_PLAIN = `A letter without any at sign at all.\nJust words, numbers 12345, and punctuation!\n`;

const RTF = String.raw`{\rtf1\ansi{\fonttbl{\f0\fswiss Helvetica;}{\f1\fmodern Courier New;}}\f0 Invoice\par @@FAX 15551234567@@\par\f1 mail: someone@example.com\par}`;

/** A flat OpenDocument text: `pages` paragraphs, each on a page of its own. */
function fodt(pages: string[]): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text">
<office:automatic-styles><style:style style:name="PB" style:family="paragraph"><style:paragraph-properties fo:break-before="page"/></style:style></office:automatic-styles>
<office:body><office:text>${pages.map((p, i) => `<text:p${i ? ' text:style-name="PB"' : ''}>${esc(p)}</text:p>`).join('\n')}</office:text></office:body></office:document>`;
}

async function officeCorpus(dir: string): Promise<CorpusFile[]> {
  const soffice = TOOLS.soffice!;
  const inDir = path.join(dir, 'office-in');
  const outDir = path.join(dir, 'office-out');
  mkdirSync(inDir, { recursive: true });
  const inputs: Record<string, string> = {
    'letter.txt': TXT,
    'plain.txt': TXT_PLAIN,
    'invoice.html': HTML,
    'memo.rtf': RTF,
    'three-pages.fodt': fodt(['page one, no code', `page two ${CODE} and a@b.example`, 'page three']),
    'fifty-five-pages.fodt': fodt(Array.from({ length: 55 }, (_, i) => (i === 50 ? `page 51 ${CODE}` : `page ${i + 1}`))),
  };
  for (const [name, text] of Object.entries(inputs)) writeFileSync(path.join(inDir, name), text);
  // one soffice for all the files: its start-up is most of the time
  const profile = `file://${path.join(dir, 'office-profile')}`;
  await run(soffice, ['--headless', '--norestore', `-env:UserInstallation=${profile}`, '--convert-to', 'pdf', '--outdir', outDir, ...Object.keys(inputs).map((n) => path.join(inDir, n))], 120_000);
  return readdirSync(outDir)
    .filter((n) => n.endsWith('.pdf'))
    .sort()
    .map((n) => ({ group: 'libreoffice', name: n.replace(/\.pdf$/, ''), data: readFileSync(path.join(outDir, n)) }));
}

async function chromiumCorpus(dir: string): Promise<CorpusFile[]> {
  const html = path.join(dir, 'chromium.html');
  writeFileSync(html, HTML);
  const out = path.join(dir, 'chromium.pdf');
  const args = ['--headless', '--disable-gpu', '--no-first-run', '--no-pdf-header-footer', `--user-data-dir=${path.join(dir, 'chromium-profile')}`, `--print-to-pdf=${out}`];
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  await run(TOOLS.chromium!, [...args, `file://${html}`], 60_000);
  return [{ group: 'chromium', name: 'invoice-html', data: readFileSync(out) }];
}

// ---- rewrites of other generators' output

async function rewrites(dir: string, bases: CorpusFile[]): Promise<CorpusFile[]> {
  const rw = path.join(dir, 'rewrites');
  mkdirSync(rw, { recursive: true });
  const jobs: (() => Promise<CorpusFile | null>)[] = [];
  const job = (group: string, base: CorpusFile, variant: string, cmd: (inp: string, out: string) => [string, string[]]) =>
    jobs.push(async () => {
      const name = `${base.group}-${base.name}${variant ? `-${variant}` : ''}`;
      const inp = path.join(rw, `${base.group}-${base.name}.pdf`);
      if (!existsSync(inp)) writeFileSync(inp, base.data);
      const out = path.join(rw, `${group}-${name}.pdf`);
      const [c, args] = cmd(inp, out);
      try {
        await run(c, args);
      } catch (err) {
        // qpdf exits 3 for warnings and still writes its output
        if (!existsSync(out)) throw err;
      }
      return { group, name, data: readFileSync(out) };
    });
  for (const base of bases) {
    if (TOOLS.pdftocairo) job('pdftocairo', base, '', (i, o) => [TOOLS.pdftocairo!, ['-pdf', i, o]]);
    if (TOOLS.gs) job('gs-pdfwrite', base, '', (i, o) => [TOOLS.gs!, ['-q', '-dBATCH', '-dNOPAUSE', '-dSAFER', '-sDEVICE=pdfwrite', `-sOutputFile=${o}`, i]]);
    if (TOOLS.qpdf) {
      const variants: Record<string, string[]> = {
        'objstm-generate': ['--object-streams=generate'],
        'objstm-disable': ['--object-streams=disable'],
        uncompressed: ['--stream-data=uncompress'],
        qdf: ['--qdf'],
        linearized: ['--linearize'],
        'aes256-empty-password': ['--encrypt', '', 'owner', '256', '--'],
        'rc4-empty-password': ['--allow-weak-crypto', '--encrypt', '', 'owner', '128', '--use-aes=n', '--'],
      };
      for (const [v, flags] of Object.entries(variants)) job('qpdf', base, v, (i, o) => [TOOLS.qpdf!, [...flags, i, o]]);
    }
  }
  return (await limited(jobs)).filter((f): f is CorpusFile => f !== null);
}

/** PostScript with text in a standard font, through ps2pdf (Ghostscript re-encodes and embeds the font). */
async function ps2pdfCorpus(dir: string): Promise<CorpusFile[]> {
  const ps = path.join(dir, 'letter.ps');
  const lines = ['Dear customer,', CODE, 'write to billing@example.com', '(no at sign on this line)'];
  const show = lines.map((l, i) => `72 ${700 - i * 20} moveto (${l.replace(/[()\\]/g, '\\$&')}) show`).join('\n');
  writeFileSync(ps, `%!PS\n/Helvetica findfont 12 scalefont setfont\n${show}\nshowpage\n/Courier findfont 12 scalefont setfont\n72 700 moveto (plain page two) show\nshowpage\n`);
  const out = path.join(dir, 'letter-ps.pdf');
  await run(TOOLS.ps2pdf!, [ps, out]);
  return [{ group: 'ps2pdf', name: 'letter-ps', data: readFileSync(out) }];
}

/**
 * Ghostscript's output, edited: a Type 1 font embedded whole (FontFile, PDF 1.1) carries its own
 * encoding, which pdfjs reads for the text when the PDF gives the font no /Encoding and no
 * ToUnicode map it can use. Swapped there, code 0x41 ('A') draws the glyph "at". The variants add
 * ToUnicode maps pdfjs reads as empty (a 4-byte code, entries after "endcmap").
 */
async function type1Edited(dir: string): Promise<CorpusFile[]> {
  const ps = path.join(dir, 'type1.ps');
  writeFileSync(ps, '%!PS\n/NimbusSans-Regular findfont 12 scalefont setfont\n72 700 moveto (AB@C) show\nshowpage\n');
  const gsOut = path.join(dir, 'type1.pdf');
  const qdf = path.join(dir, 'type1-qdf.pdf');
  await run(TOOLS.gs!, ['-q', '-dBATCH', '-dNOPAUSE', '-dSAFER', '-sDEVICE=pdfwrite', '-dCompatibilityLevel=1.1', `-sOutputFile=${gsOut}`, ps]);
  await run(TOOLS.qpdf!, ['--qdf', '--object-streams=disable', gsOut, qdf]);
  const enc = '/Encoding /WinAnsiEncoding';
  const edits: [string, string][] = [
    ['(AB@C)', '(AAAA)'],
    ['dup 64 /at put', 'dup 65 /at put'],
    ['dup 65 /A put', 'dup 64 /A put'],
  ];
  let text = readFileSync(qdf).toString('latin1');
  if (![...edits.map(([from]) => from), enc, '/FontFile '].every((t) => text.includes(t))) {
    console.warn('pdf-at-signs: this Ghostscript writes its Type 1 fonts differently; the edited Type 1 documents are skipped');
    return [];
  }
  for (const [from, to] of edits) text = text.replace(from, to);
  const size = Number(/\/Size (\d+)/.exec(text)?.[1]);
  const root = Number(/\/Root (\d+) 0 R/.exec(text)?.[1]);
  const variant = (name: string, cmap: string | null): CorpusFile => {
    const t = text.replace(enc, cmap ? `/ToUnicode ${size} 0 R`.padEnd(enc.length) : ' '.repeat(enc.length));
    const base = Buffer.from(t, 'latin1');
    return { group: 'gs-type1-edited', name, data: cmap ? incrementalUpdate(base, { [size]: streamBody('', cmap) }, { size: size + 1, root }) : base };
  };
  return [
    variant('builtin-encoding', null),
    variant('tounicode-4-byte-code', toUnicodeCMap('1 beginbfchar <FFFFFFFF> <0041> endbfchar', '<00000000> <FFFFFFFF>')),
    variant('tounicode-after-endcmap', toUnicodeCMap('').replace('endcmap', 'endcmap\n1 beginbfchar <20> <0020> endbfchar')),
  ];
}

/** Every generator that is installed, in `dir`; slow ones run side by side. */
export async function buildCorpus(dir: string): Promise<CorpusFile[]> {
  mkdirSync(dir, { recursive: true });
  const [pdfLib, office, chromium, ps, type1] = await Promise.all([
    pdfLibCorpus(),
    TOOLS.soffice ? officeCorpus(dir) : [],
    TOOLS.chromium ? chromiumCorpus(dir) : [],
    TOOLS.ps2pdf ? ps2pdfCorpus(dir) : [],
    TOOLS.gs && TOOLS.qpdf ? type1Edited(dir) : [],
  ]);
  // rewritten: a few pdf-lib files and every LibreOffice and Chromium output
  const pick = new Set(['code-objstm', 'code-page-2-no-objstm', 'forms', 'times-4-at']);
  const bases = [...pdfLib.filter((f) => pick.has(f.name)), ...office, ...chromium];
  return [...pdfLib, ...office, ...chromium, ...ps, ...type1, ...(await rewrites(dir, bases))];
}
