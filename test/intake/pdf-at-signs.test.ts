// The '@' pre-check (src/intake/pdf-at-signs.ts) against pdfjs, the text the spool would read.
// The spool skips pdfjs when `cannotHoldCodes` says yes, so the one thing that must never happen
// is a bound below the '@'-like characters ('@', U+FF20, U+FE6B) pdfjs finds on a page. The
// documents come from real generators (pdf-lib, LibreOffice, Chromium, and rewrites by pdftocairo,
// qpdf and Ghostscript, each skipped when absent), from hand-made PDFs that reach pdfjs's text by
// the less travelled roads (test/helpers/pdf-craft.ts), and from hostile, truncated and mutated
// files. A table of what the scanner said for each generated file is printed at the end.
// A violating file is kept in $PDF_AT_SIGNS_FAILURES (default: <tmp>/pdf-at-signs-failures).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atSignBound, cannotHoldCodes, type AtSignBound } from '../../src/intake/pdf-at-signs.js';
import { pdfPageTexts } from '../../src/intake/pdf-text.js';
import { hasAnyCode, parseEmbeddedCodes } from '../../src/spool/embedded-codes.js';
import { pdfBomb } from '../helpers/pdf-bomb.js';
import { buildCorpus, MISSING, TOOLS, type CorpusFile, type Tool } from '../helpers/pdf-corpus.js';
import { craftedPdfs, hostilePdfs, mutate } from '../helpers/pdf-craft.js';
import { benchLetter } from '../helpers/pdf-letter.js';
import { prng } from '../helpers/prng.js';

for (const [tool, why] of Object.entries(MISSING)) if (!TOOLS[tool as Tool]) console.warn(`pdf-at-signs: ${why}; its documents are skipped`);

const FAILURES = process.env.PDF_AT_SIGNS_FAILURES ?? path.join(os.tmpdir(), 'pdf-at-signs-failures');
/** "well under a second" for one call, with room for a slow CI machine */
const CALL_MS = 500;

const atSigns = (s: string) => (s.match(/[@\uFF20\uFE6B]/g) ?? []).length;

interface Verdict {
  name: string;
  bound: AtSignBound;
  ms: number;
  /** pdfjs's '@'-like count per page, or why pdfjs could not read the file */
  pdfjs: number[] | string;
  /** what is wrong, when something is */
  violation?: string;
}

/** The scanner's answer and pdfjs's, and whether the first is a true bound of the second. */
async function judge(name: string, data: Buffer, opts: { pdfjs: 'always' | 'when-ok' | 'never' } = { pdfjs: 'always' }): Promise<Verdict> {
  const t = performance.now();
  const bound = atSignBound(data);
  const ms = performance.now() - t;
  const v: Verdict = { name, bound, ms, pdfjs: 'not read' };
  if (opts.pdfjs === 'never' || (opts.pdfjs === 'when-ok' && !bound.ok)) return v;
  let texts: string[];
  try {
    texts = await pdfPageTexts(data);
  } catch (err) {
    v.pdfjs = `pdfjs: ${String((err as Error)?.message ?? err).slice(0, 80)}`;
    return v;
  }
  v.pdfjs = texts.map(atSigns);
  const problems: string[] = [];
  if (bound.ok) {
    if (bound.pages.length !== texts.length) problems.push(`${bound.pages.length} bounds for pdfjs's ${texts.length} pages`);
    texts.forEach((text, i) => {
      const b = bound.pages[i];
      if (b === undefined || atSigns(text) > b) problems.push(`page ${i + 1}: bound ${b} < pdfjs's ${atSigns(text)} in ${JSON.stringify(text.slice(0, 120))}`);
    });
  }
  if (hasAnyCode(parseEmbeddedCodes(texts)) && cannotHoldCodes(data)) problems.push('pdfjs finds a code, yet cannotHoldCodes is true');
  if (problems.length) {
    v.violation = `${name}: ${problems.join('; ')}`;
    mkdirSync(FAILURES, { recursive: true });
    const file = path.join(FAILURES, `${name.replace(/[^\w.+-]+/g, '_')}.pdf`);
    writeFileSync(file, data);
    writeFileSync(`${file}.txt`, `${v.violation}\natSignBound: ${JSON.stringify(bound)}\n${texts.map((t, i) => `--- pdfjs page ${i + 1}\n${t}`).join('\n')}\n`);
    v.violation += ` (kept as ${file})`;
  }
  return v;
}

async function judgeAll(files: { name: string; data: Buffer }[], opts?: Parameters<typeof judge>[2]): Promise<Verdict[]> {
  const out: Verdict[] = [];
  for (const f of files) out.push(await judge(f.name, f.data, opts));
  return out;
}

const violations = (vs: Verdict[]) => vs.flatMap((v) => (v.violation ? [v.violation] : []));
const slow = (vs: Verdict[]) => vs.filter((v) => v.ms > CALL_MS).map((v) => `${v.name}: ${v.ms.toFixed(0)} ms`);

// ---- the table printed at the end

const table: { group: string; v: Verdict }[] = [];

function list(ns: number[]): string {
  if (ns.length <= 6) return `[${ns.join(',')}]`;
  return `[${ns.slice(0, 3).join(',')},…${ns.length}p max ${Math.max(...ns)}]`;
}

function printTable(): void {
  if (!table.length) return;
  const rows = table.map(({ group, v }) => [
    group,
    v.name,
    v.bound.ok ? 'ok' : `unknown: ${v.bound.why}`,
    v.bound.ok ? list(v.bound.pages) : '',
    Array.isArray(v.pdfjs) ? list(v.pdfjs) : v.pdfjs,
    `${v.ms.toFixed(1)}ms`,
    v.violation ? 'VIOLATION' : '',
  ]);
  const head = ['group', 'file', 'scanner', 'bounds', 'pdfjs', 'time', ''];
  const width = head.map((h, i) => Math.min(70, Math.max(h.length, ...rows.map((r) => r[i]!.length))));
  const line = (r: string[]) => r.map((c, i) => c.slice(0, 70).padEnd(width[i]!)).join('  ').trimEnd();
  // per group: how many ok, and the reasons of the others
  const groups = new Map<string, Map<string, number>>();
  for (const { group, v } of table) {
    const g = groups.get(group) ?? new Map<string, number>();
    const key = v.bound.ok ? 'ok' : v.bound.why;
    g.set(key, (g.get(key) ?? 0) + 1);
    groups.set(group, g);
  }
  const summary = [...groups].map(([group, g]) => `  ${group}: ${[...g].map(([k, n]) => `${n} ${k}`).join(', ')}`);
  console.log(`pdf-at-signs: what the scanner said\n${summary.join('\n')}\n${[line(head), ...rows.map(line)].join('\n')}`);
}

// ---- the corpus, made once

let dir: string;
let corpus: CorpusFile[] = [];
let buildMs = 0;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'faxgate-pdf-at-signs-'));
  const t = performance.now();
  corpus = await buildCorpus(dir);
  buildMs = performance.now() - t;
}, 180_000);

afterAll(() => {
  printTable();
  console.log(`pdf-at-signs: corpus of ${corpus.length} files built in ${(buildMs / 1000).toFixed(1)} s`);
  rmSync(dir, { recursive: true, force: true });
});

const ofGroup = (group: string) => corpus.filter((f) => f.group === group);

/** Every file of `group` keeps the invariant (and is listed in the table). */
async function checkGroup(group: string): Promise<void> {
  const files = ofGroup(group);
  expect(files.length, `no ${group} files were made`).toBeGreaterThan(0);
  const vs = await judgeAll(files);
  for (const v of vs) table.push({ group, v });
  // a generator's file pdfjs cannot read would make the comparison empty
  expect(vs.filter((v) => !Array.isArray(v.pdfjs)).map((v) => `${v.name}: ${v.pdfjs}`)).toEqual([]);
  expect(violations(vs)).toEqual([]);
  expect(slow(vs)).toEqual([]);
}

describe('what the spool relies on: pdf-lib letters are read by the scanner alone', () => {
  it("the bench's letter (Helvetica, 30 lines, a comment after %%EOF) has no '@' and cannot hold codes", async () => {
    const letter = await benchLetter();
    for (const i of [0, 1, 999]) {
      const pdf = letter(i);
      expect(atSignBound(pdf)).toEqual({ ok: true, pages: [0] });
      expect(cannotHoldCodes(pdf)).toBe(true);
    }
    expect((await judge('bench-letter', letter(7))).violation).toBeUndefined();
  });

  it('a pdf-lib letter with one e-mail address: one page, bound 1, cannot hold codes', async () => {
    const pdf = ofGroup('pdf-lib').find((f) => f.name === 'letter-one-email')!.data;
    expect(atSignBound(pdf)).toEqual({ ok: true, pages: [1] });
    expect(cannotHoldCodes(pdf)).toBe(true);
  });

  it('a pdf-lib letter with a code is left to pdfjs', () => {
    for (const name of ['helvetica-code', 'code-objstm', 'code-no-objstm', 'code-page-2-objstm']) {
      const f = ofGroup('pdf-lib').find((x) => x.name === name)!;
      expect(cannotHoldCodes(f.data), name).toBe(false);
    }
  });
});

describe('documents from real generators: every bound is at least what pdfjs reads', () => {
  it('pdf-lib: standard fonts, 0 to 7 at signs, codes (whole, in pieces, on page 2 and 51), forms, with and without object streams', () => checkGroup('pdf-lib'));
  // (checked with the pdf-lib group above; this says whether it was made)
  it.skipIf(!TOOLS.fontkit)('pdf-lib with an embedded TrueType font (DejaVu Sans, fontkit)', () => {
    expect(ofGroup('pdf-lib').map((f) => f.name)).toContain('dejavu-ttf');
  });
  it.skipIf(!TOOLS.soffice)('LibreOffice: text, HTML, RTF and flat ODT, up to 55 pages', () => checkGroup('libreoffice'));
  it.skipIf(!TOOLS.chromium)('Chromium: an HTML page printed to PDF', () => checkGroup('chromium'));
  it.skipIf(!TOOLS.ps2pdf)('ps2pdf: a PostScript letter', () => checkGroup('ps2pdf'));
  it.skipIf(!TOOLS.pdftocairo)('pdftocairo -pdf rewrites (what CUPS produces)', () => checkGroup('pdftocairo'));
  it.skipIf(!TOOLS.gs)('Ghostscript pdfwrite rewrites', () => checkGroup('gs-pdfwrite'));
  it.skipIf(!TOOLS.gs || !TOOLS.qpdf)("Ghostscript's embedded Type 1 font, edited so that its own encoding draws 'A' as '@'", () => checkGroup('gs-type1-edited'));
  it.skipIf(!TOOLS.qpdf)('qpdf rewrites: object streams on and off, uncompressed, QDF, linearized, encrypted with an empty password', () => checkGroup('qpdf'));
});

describe('hand-made documents: every road to an "@" in pdfjs', () => {
  it('strings, glyph names, encodings, ToUnicode maps, fonts in effect, forms, filters, revisions', async () => {
    const vs = await judgeAll(craftedPdfs());
    for (const v of vs) table.push({ group: 'crafted', v });
    expect(violations(vs)).toEqual([]);
    expect(slow(vs)).toEqual([]);
  });
});

describe('hostile input: an answer (ok or not) in well under a second, and never a wrong one', () => {
  it('decompression bombs', async () => {
    const vs = await judgeAll(
      [1, 50, 900, 2600].map((mb) => ({ name: `bomb-${mb}mb`, data: pdfBomb(mb) })),
      { pdfjs: 'never' }, // pdfjs would inflate gigabytes; the bombs hold spaces only
    );
    expect(slow(vs)).toEqual([]);
    // a page of spaces: if the scanner says anything, it is 0
    for (const v of vs) if (v.bound.ok) expect(v.bound.pages).toEqual([0]);
  });

  it('page trees with cycles, lying counts and 10,000 levels; forms drawing each other; 5 MB content streams', async () => {
    const hostile = hostilePdfs();
    const vs: Verdict[] = [];
    for (const h of hostile) vs.push(await judge(`hostile-${h.name}`, h.data, { pdfjs: h.pdfjs === false ? 'never' : 'when-ok' }));
    expect(slow(vs)).toEqual([]);
    expect(violations(vs)).toEqual([]);
    // the slow-for-pdfjs one must not be taken on trust either
    const fan = vs.find((v) => v.name === 'hostile-forms-fanout-2^30')!;
    if (fan.bound.ok) expect(fan.bound.pages[0]).toBe(0);
  });

  it('every 97th prefix of real PDFs (an incremental update among them)', async () => {
    const bases = [
      ofGroup('pdf-lib').find((f) => f.name === 'code-page-2-no-objstm')!,
      ofGroup('pdf-lib').find((f) => f.name === 'forms')!,
      { name: 'incremental-new-content', data: craftedPdfs().find((c) => c.name === 'incremental-new-content')!.data },
      ...ofGroup('libreoffice').slice(0, 1),
      ...ofGroup('qpdf').filter((f) => f.name.endsWith('-qdf')).slice(0, 1),
    ];
    const prefixes = bases.flatMap((b) => Array.from({ length: Math.floor(b.data.length / 97) }, (_, k) => ({ name: `${b.name}-prefix-${(k + 1) * 97}`, data: b.data.subarray(0, (k + 1) * 97) })));
    const vs = await judgeAll(prefixes, { pdfjs: 'when-ok' });
    console.log(`pdf-at-signs: ${prefixes.length} prefixes, ${vs.filter((v) => v.bound.ok).length} answered ok`);
    expect(slow(vs)).toEqual([]);
    expect(violations(vs)).toEqual([]);
  });

  it('300 random mutations of corpus PDFs (seeded, so each can be made again)', async () => {
    // small, uncompressed files, where an edit lands in the syntax the scanner reads
    const bases = [
      ...corpus.filter((f) => f.data.length < 30_000 && (f.name.endsWith('-qdf') || f.name.endsWith('-uncompressed') || f.name.endsWith('no-objstm'))),
      ...craftedPdfs().map((c) => ({ group: 'crafted', ...c })),
      ...corpus.filter((f) => f.group === 'pdf-lib' && f.data.length < 5_000),
    ];
    const rand = prng(20240607);
    const vs: Verdict[] = [];
    for (let i = 0; i < 300; i++) {
      const base = bases[Math.floor(rand() * bases.length)]!;
      vs.push(await judge(`mutant-${i}-of-${base.group}-${base.name}`, mutate(base.data, rand), { pdfjs: 'when-ok' }));
    }
    const read = vs.filter((v) => v.bound.ok && Array.isArray(v.pdfjs)).length;
    console.log(`pdf-at-signs: 300 mutants of ${bases.length} files, ${vs.filter((v) => v.bound.ok).length} answered ok (${read} of them read by pdfjs)`);
    expect(slow(vs)).toEqual([]);
    expect(violations(vs)).toEqual([]);
  });
});
