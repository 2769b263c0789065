// Hand-made PDFs for the '@' pre-check's differential test (test/intake/pdf-at-signs.test.ts):
// small, valid documents that reach pdfjs's text through the less travelled roads (glyph names,
// ToUnicode maps, fonts set by ExtGState, forms that inherit the font, incremental updates...),
// and hostile ones (cycles, lying counts, deep trees, huge streams) that must not hang a scanner.
import { deflateSync } from 'node:zlib';

type Body = string | Buffer;

/** Objects numbered from 1 in the order added (or reserved), written with a correct xref table. */
export class PdfWriter {
  private readonly objects: (Buffer | undefined)[] = [];

  reserve(): number {
    this.objects.push(undefined);
    return this.objects.length;
  }

  set(num: number, body: Body): number {
    this.objects[num - 1] = Buffer.isBuffer(body) ? body : Buffer.from(body, 'latin1');
    return num;
  }

  add(body: Body): number {
    return this.set(this.reserve(), body);
  }

  /** A stream object; `dict` is the inside of its dictionary, without /Length unless `length` is given. */
  stream(dict: string, data: Body, opts: { length?: string } = {}): number {
    const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data, 'latin1');
    const head = `<< ${dict} /Length ${opts.length ?? bytes.length} >>\nstream\n`;
    return this.add(Buffer.concat([Buffer.from(head, 'latin1'), bytes, Buffer.from('\nendstream', 'latin1')]));
  }

  /** The whole file; `trailer` is added inside the trailer dictionary (after /Size and /Root). */
  build(root = 1, opts: { trailer?: string; header?: string } = {}): Buffer {
    const parts: Buffer[] = [Buffer.from(opts.header ?? '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
    let at = parts[0]!.length;
    const offsets: number[] = [];
    this.objects.forEach((o, i) => {
      if (!o) throw new Error(`object ${i + 1} reserved but never set`);
      offsets.push(at);
      const b = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), o, Buffer.from('\nendobj\n')]);
      parts.push(b);
      at += b.length;
    });
    const rows = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
    const trailer = `<< /Size ${offsets.length + 1} /Root ${root} 0 R ${opts.trailer ?? ''} >>`;
    parts.push(Buffer.from(`xref\n0 ${offsets.length + 1}\n0000000000 65535 f \n${rows}trailer\n${trailer}\nstartxref\n${at}\n%%EOF\n`, 'latin1'));
    return Buffer.concat(parts);
  }
}

/**
 * A document whose catalog (object 1) names the page tree root (object 2): `build` adds the rest
 * and returns the one page (the root then holds that page alone) or the root's whole dictionary.
 */
function pdfDoc(build: (w: PdfWriter, pages: number) => number | string): Buffer {
  const w = new PdfWriter();
  const catalog = w.reserve();
  const pages = w.reserve();
  const root = build(w, pages);
  w.set(catalog, `<< /Type /Catalog /Pages ${pages} 0 R >>`);
  w.set(pages, typeof root === 'number' ? `<< /Type /Pages /Kids [${root} 0 R] /Count 1 >>` : root);
  return w.build(catalog);
}

/** Appends an incremental update that replaces (or adds) the given objects. */
export function incrementalUpdate(base: Buffer, objects: Record<number, Body>, opts: { size: number; root?: number }): Buffer {
  const prev = Number(/startxref\s+(\d+)\s+%%EOF\s*$/.exec(base.toString('latin1'))?.[1]);
  const parts: Buffer[] = [base];
  let at = base.length;
  const rows: string[] = [];
  for (const [num, body] of Object.entries(objects)) {
    const b = Buffer.concat([Buffer.from(`${num} 0 obj\n`), Buffer.isBuffer(body) ? body : Buffer.from(body, 'latin1'), Buffer.from('\nendobj\n')]);
    rows.push(`${num} 1\n${String(at).padStart(10, '0')} 00000 n \n`);
    parts.push(b);
    at += b.length;
  }
  parts.push(Buffer.from(`xref\n${rows.join('')}trailer\n<< /Size ${opts.size} /Root ${opts.root ?? 1} 0 R /Prev ${prev} >>\nstartxref\n${at}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}

export function streamBody(dict: string, data: Body): Buffer {
  const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data, 'latin1');
  return Buffer.concat([Buffer.from(`<< ${dict} /Length ${bytes.length} >>\nstream\n`, 'latin1'), bytes, Buffer.from('\nendstream', 'latin1')]);
}

// Fonts. In all of them code 0x41 ('A') is not '@' unless the font says otherwise.
export const HELVETICA = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>';
/** A standard font whose code 0x41 draws the glyph `glyph` (a Differences array). */
export const glyphFont = (glyph: string, base = 'Helvetica', baseEncoding = '') =>
  `<< /Type /Font /Subtype /Type1 /BaseFont /${base} /Encoding << /Type /Encoding ${baseEncoding} /Differences [65 /${glyph}] >> >>`;

/** One page whose content is `content` and whose /Font resources are `fonts` (name -> font dictionary). */
export function onePage(content: Body | Body[], fonts: Record<string, string> = { F1: HELVETICA }, more: { resources?: string; page?: string } = {}): Buffer {
  return pdfDoc((w, pages) => {
    const contents = (Array.isArray(content) ? content : [content]).map((c) => w.stream('', c));
    const fontRefs = Object.entries(fonts).map(([name, dict]) => `/${name} ${w.add(dict)} 0 R`);
    return w.add(
      `<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << ${fontRefs.join(' ')} >> ${more.resources ?? ''} >> ` +
        `/Contents ${contents.length === 1 ? `${contents[0]} 0 R` : `[${contents.map((c) => `${c} 0 R`).join(' ')}]`} ${more.page ?? ''} >>`,
    );
  });
}

/** A ToUnicode CMap stream body with the given bfchar/bfrange lines. */
export function toUnicodeCMap(lines: string, codespace = '<00> <FF>'): string {
  return [
    '/CIDInit /ProcSet findresource begin 12 dict begin begincmap',
    '/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def /CMapName /Adobe-Identity-UCS def /CMapType 2 def',
    `1 begincodespacerange ${codespace} endcodespacerange`,
    lines,
    'endcmap CMapName currentdict /CMap defineresource pop end end',
  ].join('\n');
}

/** A one-page document whose font F1 has the ToUnicode map `cmap` (and F1 is `font` otherwise). */
function withToUnicode(cmap: string, content: string, font = '/Subtype /Type1 /BaseFont /Helvetica'): Buffer {
  return pdfDoc((w, pages) => {
    const tu = w.stream('', cmap);
    const f = w.add(`<< /Type /Font ${font} /ToUnicode ${tu} 0 R >>`);
    const c = w.stream('', content);
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R >>`);
  });
}

export interface Crafted {
  name: string;
  data: Buffer;
  /** false: too slow for pdfjs (minutes), only the scanner reads it */
  pdfjs?: boolean;
}

const text = (s: string, font = 'F1') => `BT /${font} 12 Tf 72 700 Td ${s} ET`;

/** Valid documents, each with '@'-like characters reachable only through one particular road. */
export function craftedPdfs(): Crafted[] {
  const out: Crafted[] = [];
  const push = (name: string, data: Buffer) => out.push({ name, data });

  // -- strings: every way a content stream can spell '@'
  push('literal', onePage(text('(@@FAX 15551234567@@) Tj')));
  push('octal-escapes', onePage(text('(\\100\\100FAX 15551234567\\100\\100) Tj')));
  push('octal-escape-4-digits', onePage(text('(\\1000\\1001\\1002\\1003) Tj')));
  push('unknown-escape', onePage(text('(\\@\\@\\@\\@) Tj')));
  push('line-continuation', onePage(text('(@@\\\n@@) Tj')));
  push('hex', onePage(text('<40404040> Tj')));
  push('hex-spaced', onePage(text('<4 0 4\n0 40 4\t0> Tj')));
  push('hex-odd-digit', onePage(text('<404040 4> Tj')));
  push('percent-in-string', onePage(text('(50% @@@@) Tj')));
  push('nested-parens', onePage(text('(a(b\\)c)@@@@) Tj')));
  push('TJ-array', onePage(text('[(@@) -120 (FAX 1555) 50 <40> (@)] TJ')));
  push('quote-operators', onePage(text("(@@) ' 1 2 (@@) \"")));
  push('two-operands', onePage(text('(@@) (@@) Tj')));
  push('no-BT', onePage('/F1 12 Tf (@@@@) Tj'));
  push('split-contents-array', onePage(['BT /F1 12 Tf 72 700 Td (@@', 'FAX 1555@@) Tj ET']));
  push('split-operator-over-streams', onePage(['BT /F1 12 Tf 72 700 Td (@@@@)', ' Tj ET']));
  push('comment-ends-first-stream', onePage(['BT /F1 12 Tf 72 700 Td % a comment without an end of line', '(@@@@) Tj ET']));
  push('no-font', onePage('BT 72 700 Td (@@@@) Tj ET', {}));
  push('unknown-font-name', onePage(text('(@@@@) Tj', 'F9')));
  push('name-hex-escape', onePage('BT /F#31 12 Tf (@@@@) Tj ET'));
  push('compat-section', onePage(`BX /Foo 1 2 Bar EX ${text('(@@@@) Tj')}`));
  push('comment-between', onePage('BT /F1 12 Tf % (hidden)\n(@@@@) % trailing\nTj ET'));

  // -- glyph names: code 0x41 drawn as '@' (pdfjs maps glyph names to Unicode)
  for (const glyph of ['at', 'atmonospace', 'atsmall', 'uni0040', 'u0040', 'uniFF20', 'uFE6B', 'G40', 'g0040', 'C64', 'c64'])
    push(`differences-${glyph}`, onePage(text('(AAAA) Tj'), { F1: glyphFont(glyph) }));
  push('differences-base-encoding', onePage(text('(AAAA) Tj'), { F1: glyphFont('at', 'Times-Roman', '/BaseEncoding /MacRomanEncoding') }));
  push('differences-nonstandard-font', onePage(text('(AAAA) Tj'), { F1: glyphFont('at', 'MyFancyFont') }));
  push('differences-truetype', onePage(text('(AAAA) Tj'), { F1: glyphFont('at').replace('/Type1', '/TrueType') }));
  push('differences-indirect', pdfDoc((w, pages) => {
    const enc = w.add('<< /Type /Encoding /Differences [64 /A 65 /at] >>');
    const f = w.add(`<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding ${enc} 0 R >>`);
    const c = w.stream('', text('(AA@AA@) Tj'));
    const page = w.add(`<< /Type /Page /Parent ${pages} 0 R /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R >>`);
    return `<< /Type /Pages /Kids [${page} 0 R] /Count 1 /MediaBox [0 0 612 792] >>`;
  }));
  // standard encodings that are not WinAnsi, and the symbolic standard fonts
  for (const enc of ['/MacRomanEncoding', '/StandardEncoding', '/PDFDocEncoding', '/MacExpertEncoding', '']) {
    const f = `<< /Type /Font /Subtype /Type1 /BaseFont /Courier ${enc ? `/Encoding ${enc}` : ''} >>`;
    push(`encoding-${enc.slice(1) || 'none'}`, onePage(text('(@@@@) Tj'), { F1: f }));
  }
  push('symbol-font', onePage(text('(@@@@ abc) Tj'), { F1: '<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>' }));
  push('zapf-font', onePage(text('(@@@@ abc) Tj'), { F1: '<< /Type /Font /Subtype /Type1 /BaseFont /ZapfDingbats >>' }));
  push('symbolic-nonstandard', onePage(text('(@@@@) Tj'), { F1: '<< /Type /Font /Subtype /TrueType /BaseFont /Wingdings /FontDescriptor << /Flags 4 /FontName /Wingdings >> >>' }));

  // -- ToUnicode maps
  push('tounicode-bfchar', withToUnicode(toUnicodeCMap('1 beginbfchar <41> <0040> endbfchar'), text('(AAAA) Tj')));
  push('tounicode-bfchar-two-ats', withToUnicode(toUnicodeCMap('1 beginbfchar <41> <00400040> endbfchar'), text('(AA) Tj')));
  push('tounicode-bfrange', withToUnicode(toUnicodeCMap('1 beginbfrange <3F> <5A> <003E> endbfrange'), text('(AAAA) Tj')));
  push('tounicode-bfrange-array', withToUnicode(toUnicodeCMap('1 beginbfrange <41> <42> [<FF20> <FE6B>] endbfrange'), text('(ABAB) Tj')));
  // a range whose end is below its start maps nothing, but still has its destination to skip
  push('tounicode-bfrange-reversed', withToUnicode(toUnicodeCMap('3 beginbfrange <43> <42> <FF> <41> <41> <40> <50> <50> <0050> endbfrange'), text('(AAAA) Tj')));
  push('tounicode-fullwidth', withToUnicode(toUnicodeCMap('1 beginbfchar <41> <FF20> endbfchar'), text('(AAAA) Tj')));
  // parentheses nested in a string are part of it: four "(" shown, each '@' by the map
  push('tounicode-nested-parentheses', withToUnicode(toUnicodeCMap('1 beginbfchar <28> <0040> endbfchar'), text('(((((x))))) Tj')));
  push('tounicode-identity-name', pdfDoc((w, pages) => {
    const f = w.add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode /Identity-H >>');
    const c = w.stream('', text('(AAAA) Tj'));
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R >>`);
  }));
  const type0 = (encoding: string, extra = '') =>
    `/Subtype /Type0 /BaseFont /Foo /Encoding ${encoding} /DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Foo /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor << /Type /FontDescriptor /FontName /Foo /Flags 4 >> >>] ${extra}`;
  push('type0-tounicode', withToUnicode(toUnicodeCMap('2 beginbfchar <0001> <0040> <0040> <0041> endbfchar', '<0000> <FFFF>'), text('<0001000100010001> Tj'), type0('/Identity-H')));
  push('type0-tounicode-range', withToUnicode(toUnicodeCMap('1 beginbfrange <0100> <01FF> <0000> endbfrange', '<0000> <FFFF>'), text('<0140 0140 0140 0140> Tj'), type0('/Identity-H')));
  push('type0-no-tounicode', onePage(text('<0040004000400040FF20> Tj'), { F1: `<< /Type /Font ${type0('/Identity-H')} >>` }));
  push('type0-vertical', withToUnicode(toUnicodeCMap('1 beginbfchar <0001> <0040> endbfchar', '<0000> <FFFF>'), text('<0001000100010001> Tj'), type0('/Identity-V')));
  push('type0-predefined-cmap', onePage(text('<ff20ff20ff20ff20> Tj'), { F1: `<< /Type /Font ${type0('/UniJIS-UCS2-H').replace('(Identity)', '(Japan1)')} >>` }));

  // -- the font in effect: q/Q, across BT/ET, set by an ExtGState, inherited by a form
  const fonts = { F1: HELVETICA, F2: glyphFont('at') };
  push('font-survives-ET', onePage('BT /F2 12 Tf ET BT (AAAA) Tj ET', fonts));
  push('font-restored-by-Q', onePage('q BT /F2 12 Tf ET q BT /F1 12 Tf ET Q BT (AAAA) Tj ET Q', fonts));
  push('font-from-extgstate', pdfDoc((w, pages) => {
    const f1 = w.add(HELVETICA);
    const f2 = w.add(glyphFont('at'));
    const c = w.stream('', 'BT /F1 12 Tf 72 700 Td /GS1 gs (AAAA) Tj ET');
    return w.add(
      `<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f1} 0 R >> /ExtGState << /GS1 << /Type /ExtGState /Font [${f2} 0 R 12] >> >> >> /Contents ${c} 0 R >>`,
    );
  }));

  // -- forms: text inside XObjects, fonts inherited from the caller, resources from the page
  push('form-inherits-font', formDoc({ formContent: '(AAAA) Tj', formResources: null, page: 'BT /F2 12 Tf 72 700 Td ET /X1 Do' }));
  push('form-uses-page-resources', formDoc({ formContent: 'BT /F2 12 Tf (AAAA) Tj ET', formResources: null, page: '/X1 Do' }));
  push('form-own-resources', formDoc({ formContent: 'BT /F2 12 Tf (AAAA) Tj ET', formResources: 'own', page: '/X1 Do' }));
  push('form-nested', formDoc({ formContent: 'BT /F1 12 Tf (@@) Tj ET /X2 Do', formResources: 'nested', page: '/X1 Do /X1 Do' }));
  push('form-drawn-twice', formDoc({ formContent: 'BT /F1 12 Tf (@@) Tj ET', formResources: 'own', page: '/X1 Do /X1 Do' }));
  push('form-inside-BT', formDoc({ formContent: '(@@@@) Tj', formResources: null, page: 'BT /F1 12 Tf /X1 Do ET' }));

  // -- document structure
  push('page-order-kids', pageOrderDoc());
  push('resources-inherited', pdfDoc((w, pages) => {
    const f = w.add(glyphFont('at'));
    const c = w.stream('', text('(AAAA) Tj'));
    const page = w.add(`<< /Type /Page /Parent ${pages} 0 R /Contents ${c} 0 R >>`);
    return `<< /Type /Pages /Kids [${page} 0 R] /Count 1 /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> >>`;
  }));
  push('annotation-appearance', pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    const ap = w.stream(`/Type /XObject /Subtype /Form /BBox [0 0 200 50] /Resources << /Font << /F1 ${f} 0 R >> >>`, 'BT /F1 12 Tf 2 20 Td (@@FAX 15551234567@@) Tj ET');
    const annot = w.add(`<< /Type /Annot /Subtype /FreeText /Rect [72 600 272 650] /Contents (@@FAX 15551234567@@) /DA (/F1 12 Tf) /AP << /N ${ap} 0 R >> >>`);
    const c = w.stream('', text('(no at signs here) Tj'));
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R /Annots [${annot} 0 R] >>`);
  }));
  const flate = deflateSync(Buffer.from(text('(@@FAX 15551234567@@) Tj')));
  push('filters-flate-array', filteredDoc('/Filter [/FlateDecode]', flate));
  push('filters-ascii-hex', filteredDoc('/Filter /ASCIIHexDecode', Buffer.from(`${Buffer.from(text('(@@@@) Tj')).toString('hex')}>`)));
  push('filters-hex-then-flate', filteredDoc('/Filter [/ASCIIHexDecode /FlateDecode]', Buffer.from(`${flate.toString('hex')}>`)));
  push('filters-ascii85', filteredDoc('/Filter /ASCII85Decode', Buffer.from(`${ascii85(Buffer.from(text('(@@@@) Tj')))}~>`)));
  push('filters-runlength', filteredDoc('/Filter /RunLengthDecode', runLength(Buffer.from(text('(@@@@) Tj')))));
  push('stream-length-too-short', filteredDoc('', Buffer.from(`${' '.repeat(40)}${text('(@@@@) Tj')}`), '10'));
  push('stream-length-too-long', filteredDoc('', Buffer.from(text('(@@@@) Tj')), '5000'));
  push('stream-length-indirect', lengthIndirect());
  push('inline-image', onePage(`q BI /W 4 /H 1 /BPC 8 /CS /G ID @@@@ EI Q ${text('(@@) Tj')}`));

  // -- revisions and file framing
  const base = onePage(text('(nothing to see) Tj'), { F1: HELVETICA });
  push('incremental-new-content', incrementalUpdate(base, { 3: streamBody('', text('(@@FAX 15551234567@@) Tj')) }, { size: 6 }));
  push('incremental-new-font', incrementalUpdate(onePage(text('(AAAA) Tj')), { 4: glyphFont('at') }, { size: 6 }));
  push('junk-before-header', Buffer.concat([Buffer.from('JUNK'.repeat(100)), onePage(text('(@@@@) Tj'))]));
  push('bench-style-tail', Buffer.concat([onePage(text('(@@@@) Tj')), Buffer.from('\n% copy 7\n')]));
  push('xref-offsets-wrong', shiftObjects(onePage(text('(@@FAX 15551234567@@) Tj'))));
  push('duplicate-object', duplicateObject());
  push('no-xref', stripXref(onePage(text('(@@@@) Tj'))));
  push('type3-font', type3Doc());

  // -- where pdfjs and a careful reader may part ways
  push('form-own-resources-inherits-font', formDoc({ formContent: '(AAAA) Tj', formResources: 'helvetica-only', page: 'BT /F2 12 Tf 72 700 Td ET /X1 Do' }));
  push('page-node-with-kids', pageWithKids());
  // octal escapes are not masked to a byte by pdfjs: \501 is character code 321
  push('octal-321-differences', onePage(text('(\\501\\501\\501\\501) Tj'), { F1: '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding /Differences [321 /at] >> >>' }));
  push('octal-321-tounicode', withToUnicode(toUnicodeCMap('1 beginbfchar <0141> <0040> endbfchar', '<0000> <FFFF>'), text('(\\501\\501\\501\\501) Tj')));
  push('type0-octal-401', withToUnicode(toUnicodeCMap('1 beginbfchar <0000> <0040004000400040> endbfchar', '<0000> <FFFF>'), text('(\\401\\401) Tj'), type0('/Identity-H')));
  // glyph names pdfjs reads with parseInt / Number(), which stop at (or skip) what is not a digit
  for (const glyph of ['g40zz', 'uni40ZZ', 'u+040', 'u#20040', 'c+64', 'c64.', 'c#2064', 'G40'])
    push(`glyph-name-${glyph.replace('#', '%')}`, onePage(text('(AAAA) Tj'), { F1: glyphFont(glyph) }));
  push('glyph-name-forced-hex', onePage(text('(AAAA) Tj'), { F1: '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding /Differences [65 /c40. /cFF] >> >>' }));
  // one code, many '@': 256 of them, as four-'@' codes
  const many = Buffer.from('@@FAX 15551234567@@ '.repeat(64), 'utf16le').swap16().toString('hex');
  push('tounicode-256-at-signs', withToUnicode(toUnicodeCMap(`1 beginbfchar <41> <${many}> endbfchar`), text('(A) Tj')));
  push('tounicode-255-plus-encoding', withToUnicode(toUnicodeCMap(`1 beginbfchar <40> <${'0040'.repeat(255)}> endbfchar`), text('(@) Tj')));
  // object streams: a number twice in one (the xref names the second), and a stream inside one
  const code = streamBody('', text('(AAAA) Tj')).toString('latin1');
  push('objstm-plain', xrefStreamPdf({ 4: code }, [[5, glyphFont('at')]]));
  push('objstm-duplicate-number', xrefStreamPdf({ 4: code }, [[5, HELVETICA], [5, glyphFont('at')]], { 5: 1 }));
  push('objstm-holds-a-form', xrefStreamPdf({ 3: '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> /XObject << /X1 6 0 R >> >> /Contents 4 0 R >>', 4: streamBody('', '/X1 Do').toString('latin1'), 5: HELVETICA }, [[6, streamBody('/Type /XObject /Subtype /Form /BBox [0 0 612 792]', text('(@@FAX 15551234567@@) Tj')).toString('latin1')]]));
  push('objstm-holds-a-stream', xrefStreamPdf({ 5: HELVETICA }, [[4, streamBody('', text('(@@FAX 15551234567@@) Tj')).toString('latin1')]]));
  // the page's content (object 3) left out of the xref, or marked free there
  push('xref-object-missing', rewriteXref(onePage(text('(@@@@) Tj')), (rows) => `0 3\n${rows.slice(0, 3).join('')}4 2\n${rows.slice(4).join('')}`));
  push('xref-entry-free', rewriteXref(onePage(text('(@@@@) Tj')), (rows) => `0 6\n${rows.slice(0, 3).join('')}0000000000 00001 f \n${rows.slice(4).join('')}`));
  // pdfjs rebuilds the xref by scanning the file (the last definition of an object wins) when
  // its table breaks a rule of its own: object 0 not free; or the file is "linearized" (its first
  // object says so, and /L is the file's length) with no "endobj" in the first 1 KB
  push('dead-object-later', deadObjectLater({}));
  push('xref-object-0-in-use', deadObjectLater({ entry0InUse: true }));
  push('xref-fractional-offset-unused', deadObjectLater({ extraRow: '0000000009.5 00000 n ' }));
  push('xref-fractional-gen-unused', deadObjectLater({ extraRow: '0000000009 00000.5 n ' }));
  push('late-linearized-first-page', lateLinearized());
  push('linearized-name-escaped', lateLinearized({ escaped: true }));
  // pdfjs reads "99e0" and "9-9" as the number 99 (exponents; a minus inside a number is dropped)
  push('linearized-number-99e0', lateLinearized({ num: '99e0' }));
  push('linearized-number-9-9', lateLinearized({ num: '9-9' }));
  push('actualtext', onePage(`/Span << /ActualText (@@FAX 15551234567@@) >> BDC ${text('(text) Tj')} EMC`));
  return out;
}

/** Page draws /X1 (a form); F1 is Helvetica, F2 draws 'A' as '@'. */
function formDoc(o: { formContent: string; formResources: 'own' | 'nested' | 'helvetica-only' | null; page: string }): Buffer {
  return pdfDoc((w, pages) => {
    const f1 = w.add(HELVETICA);
    const f2 = w.add(glyphFont('at'));
    const fonts = `/Font << /F1 ${f1} 0 R /F2 ${f2} 0 R >>`;
    let res = '';
    if (o.formResources === 'own') res = `/Resources << ${fonts} >>`;
    if (o.formResources === 'helvetica-only') res = `/Resources << /Font << /F1 ${f1} 0 R >> >>`;
    if (o.formResources === 'nested') {
      const inner = w.stream(`/Type /XObject /Subtype /Form /BBox [0 0 100 100] /Resources << ${fonts} >>`, 'BT /F2 12 Tf (AA) Tj ET');
      res = `/Resources << ${fonts} /XObject << /X2 ${inner} 0 R >> >>`;
    }
    const x1 = w.stream(`/Type /XObject /Subtype /Form /BBox [0 0 612 792] ${res}`, o.formContent);
    const c = w.stream('', o.page);
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << ${fonts} /XObject << /X1 ${x1} 0 R >> >> /Contents ${c} 0 R >>`);
  });
}

/** The first page is a /Type /Page node that also has /Kids: pdfjs takes it as the page (its kids are never read). */
function pageWithKids(): Buffer {
  return pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    const first = w.reserve();
    const hidden = w.add(`<< /Type /Page /Parent ${first} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${w.stream('', text('(a kid) Tj'))} 0 R >>`);
    w.set(first, `<< /Type /Page /Parent ${pages} 0 R /Kids [${hidden} 0 R] /Count 1 /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${w.stream('', text('(@@FAX 15551234567@@) Tj'))} 0 R >>`);
    return `<< /Type /Pages /Kids [${first} 0 R] /Count 1 >>`;
  });
}

/**
 * A file with an xref stream: `files` are ordinary objects, `members` sit in object stream 90 in
 * that order (a number may repeat), and `index` says which member the xref names for a number.
 * Objects 1-3 are the catalog, the page tree and a page using font /F1 5 0 R and content 4 0 R.
 */
function xrefStreamPdf(files: Record<number, string>, members: [number, string][], index: Record<number, number> = {}): Buffer {
  const all: Record<number, string> = {
    1: '<< /Type /Catalog /Pages 2 0 R >>',
    2: '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    3: '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    ...files,
  };
  let header = '';
  let body = '';
  for (const [num, text] of members) {
    header += `${num} ${body.length} `;
    body += `${text}\n`;
  }
  let pdf = '%PDF-1.7\n';
  const rows = new Map<number, [number, number, number]>();
  const add = (num: number, text: string) => {
    rows.set(num, [1, pdf.length, 0]);
    pdf += `${num} 0 obj\n${text}\nendobj\n`;
  };
  for (const [num, text] of Object.entries(all)) add(Number(num), text);
  add(90, streamBody(`/Type /ObjStm /N ${members.length} /First ${header.length}`, header + body).toString('latin1'));
  members.forEach(([num], i) => {
    if (!rows.has(num) || rows.get(num)![0] === 2) rows.set(num, [2, 90, index[num] ?? i]);
  });
  for (const [num, i] of Object.entries(index)) rows.set(Number(num), [2, 90, i]);
  const size = Math.max(...rows.keys(), 91) + 1;
  rows.set(91, [1, pdf.length, 0]);
  const table = Buffer.concat(
    Array.from({ length: size }, (_, num) => {
      const [type, a, b] = rows.get(num) ?? [0, 0, num === 0 ? 65535 : 0];
      return Buffer.from([type, (a >>> 24) & 255, (a >>> 16) & 255, (a >>> 8) & 255, a & 255, (b >>> 8) & 255, b & 255]);
    }),
  );
  const xrefAt = pdf.length;
  return Buffer.concat([Buffer.from(pdf, 'latin1'), Buffer.from('91 0 obj\n'), streamBody(`/Type /XRef /Size ${size} /W [1 4 2] /Root 1 0 R`, table), Buffer.from(`\nendobj\nstartxref\n${xrefAt}\n%%EOF\n`)]);
}

/** Three pages whose objects are in the opposite order of the page tree; only the last page has '@'. */
function pageOrderDoc(): Buffer {
  return pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    const mk = (s: string) => w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${w.stream('', text(s))} 0 R >>`);
    const p3 = mk('(@@FAX 15551234567@@ page three) Tj');
    const p2 = mk('(page two) Tj');
    const inner = w.reserve();
    const p1 = mk('(page one) Tj');
    w.set(inner, `<< /Type /Pages /Parent ${pages} 0 R /Kids [${p2} 0 R ${p3} 0 R] /Count 2 >>`);
    return `<< /Type /Pages /Kids [${p1} 0 R ${inner} 0 R] /Count 3 >>`;
  });
}

function filteredDoc(filter: string, data: Buffer, length?: string): Buffer {
  return pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    const c = w.stream(filter, data, length ? { length } : {});
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R >>`);
  });
}

function lengthIndirect(): Buffer {
  return pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    const data = text('(@@@@) Tj');
    const len = w.reserve();
    const c = w.stream('', data, { length: `${len} 0 R` });
    w.set(len, String(data.length));
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R >>`);
  });
}

/** Every xref offset 3 bytes early: pdfjs notices and rebuilds the table by scanning the file. */
function shiftObjects(pdf: Buffer): Buffer {
  return Buffer.from(pdf.toString('latin1').replace(/^(\d{10}) 00000 n $/gm, (_, o: string) => `${String(Math.max(0, Number(o) - 3)).padStart(10, '0')} 00000 n `), 'latin1');
}

/** Object 3 (the page content) defined twice; the xref names the second, which holds the code. */
function duplicateObject(): Buffer {
  const pdf = onePage(text('(@@FAX 15551234567@@) Tj')).toString('latin1');
  const decoy = `3 0 obj\n${streamBody('', text('(decoy) Tj')).toString('latin1')}\nendobj\n`;
  const at = pdf.indexOf('3 0 obj');
  // the decoy goes before the real object; every offset after it moves by its length
  const out = pdf.slice(0, at) + decoy + pdf.slice(at);
  return Buffer.from(
    out
      .replace(/^(\d{10}) 00000 n $/gm, (_, o: string) => `${String(Number(o) >= at ? Number(o) + decoy.length : Number(o)).padStart(10, '0')} 00000 n `)
      .replace(/startxref\n(\d+)/, (_, o: string) => `startxref\n${Number(o) + decoy.length}`),
    'latin1',
  );
}

/** The xref table rebuilt from its rows (20 bytes each, object 0 first); nothing before it moves. */
function rewriteXref(pdf: Buffer, section: (rows: string[]) => string): Buffer {
  const s = pdf.toString('latin1');
  const x = s.lastIndexOf('xref\n0 ');
  const t = s.indexOf('trailer', x);
  const rows = s.slice(s.indexOf('\n', x + 5) + 1, t).match(/.{20}/gs) ?? [];
  return Buffer.from(`${s.slice(0, x)}xref\n${section(rows)}${s.slice(t)}`, 'latin1');
}

/**
 * Object 3 (the page content) defined twice: first a decoy the xref points at, then (unused by
 * the xref) one with a code. pdfjs reads the decoy, unless something sends it to rebuild the xref
 * by scanning the file, where the last definition wins.
 */
function deadObjectLater(o: { entry0InUse?: boolean; extraRow?: string }): Buffer {
  const pdf = onePage(text('(@@FAX 15551234567@@) Tj')).toString('latin1');
  const decoy = `3 0 obj\n${streamBody('', text('(decoy) Tj')).toString('latin1')}\nendobj\n`;
  const at = pdf.indexOf('3 0 obj');
  const out = pdf.slice(0, at) + decoy + pdf.slice(at);
  let n = 0;
  return Buffer.from(
    out
      .replace(/^(\d{10}) (\d{5}) ([nf]) $/gm, (_, off: string, gen: string, kind: string) => {
        const i = n++;
        if (i === 0) return o.entry0InUse ? `0000000009 00000 n ` : `${off} ${gen} ${kind} `;
        if (i === 3) return `${String(at).padStart(10, '0')} 00000 n `;
        return `${String(Number(off) >= at ? Number(off) + decoy.length : Number(off)).padStart(10, '0')} ${gen} ${kind} `;
      })
      .replace(/startxref\n(\d+)/, (_, x: string) => `startxref\n${Number(x) + decoy.length}`)
      // a row for an object nobody uses
      .replace(o.extraRow ? /xref\n0 6\n([\s\S]*?)trailer\n<< \/Size 6/ : /^$/, (_, rows: string) => `xref\n0 7\n${rows}${o.extraRow}\ntrailer\n<< /Size 7`),
    'latin1',
  );
}

/**
 * A first object that says "linearized", after 1 KB of comment (or with the name spelled
 * /Linea#72ized, or its number as pdfjs reads numbers and few others do): pdfjs then reads page 1 from the object its /O names (here a page no tree holds,
 * with a code), not from the page tree.
 */
function lateLinearized(o: { escaped?: boolean; num?: string } = {}): Buffer {
  const build = (length: number) => {
    const w = new PdfWriter();
    const catalog = w.reserve();
    const pages = w.reserve();
    const f = w.add(HELVETICA);
    const page = w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${w.stream('', text('(the page in the tree) Tj'))} 0 R >>`);
    const hidden = w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${w.stream('', text('(@@FAX 15551234567@@) Tj'))} 0 R >>`);
    w.set(catalog, `<< /Type /Catalog /Pages ${pages} 0 R >>`);
    w.set(pages, `<< /Type /Pages /Kids [${page} 0 R] /Count 1 >>`);
    const lin = `${o.num ?? '99'} 0 obj\n<< /${o.escaped ? 'Linea#72ized' : 'Linearized'} 1 /L ${String(length).padStart(10, '0')} /H [1 1] /O ${hidden} /E 1 /N 1 /T 1 >>\nendobj\n`;
    return w.build(catalog, { header: `%PDF-1.7\n${o.escaped || o.num ? '' : `%${'x'.repeat(1100)}\n`}${lin}` });
  };
  return build(build(0).length);
}

/** No xref table and no startxref: pdfjs finds the objects by scanning. */
function stripXref(pdf: Buffer): Buffer {
  const s = pdf.toString('latin1');
  const x = s.lastIndexOf('xref\n0 ');
  const t = s.indexOf('trailer', x);
  const end = s.indexOf('startxref', t);
  return Buffer.from(`${s.slice(0, x)}${s.slice(t, end)}%%EOF\n`, 'latin1');
}

function type3Doc(): Buffer {
  return pdfDoc((w, pages) => {
    const glyph = w.stream('', '0 0 d0 0 0 m 1 1 l S');
    const f = w.add(
      `<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1 1] /FontMatrix [0.001 0 0 0.001 0 0] /CharProcs << /at ${glyph} 0 R >> /Encoding << /Type /Encoding /Differences [65 /at] >> /FirstChar 65 /LastChar 65 /Widths [500] >>`,
    );
    const c = w.stream('', text('(AAAA) Tj'));
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R >>`);
  });
}

function ascii85(data: Buffer): string {
  let out = '';
  for (let i = 0; i < data.length; i += 4) {
    const chunk = Buffer.alloc(4);
    data.copy(chunk, 0, i, i + 4);
    let n = chunk.readUInt32BE(0);
    const n4 = Math.min(4, data.length - i);
    if (n === 0 && n4 === 4) {
      out += 'z';
      continue;
    }
    const digits: string[] = [];
    for (let k = 0; k < 5; k++) {
      digits.unshift(String.fromCharCode(33 + (n % 85)));
      n = Math.floor(n / 85);
    }
    out += digits.slice(0, n4 + 1).join('');
  }
  return out;
}

function runLength(data: Buffer): Buffer {
  const out: number[] = [];
  for (let i = 0; i < data.length; i += 128) {
    const chunk = data.subarray(i, i + 128);
    out.push(chunk.length - 1, ...chunk);
  }
  out.push(128);
  return Buffer.from(out);
}

// -- hostile documents: each must be answered (ok or not) quickly and without throwing

export function hostilePdfs(): Crafted[] {
  const out: Crafted[] = [];
  const push = (name: string, data: Buffer) => out.push({ name, data });

  // page tree: a cycle, a node that is its own kid, a Count that lies, 10,000 levels
  push('pages-cycle', pagesDoc((w, pages, page) => {
    const inner = w.reserve();
    w.set(inner, `<< /Type /Pages /Parent ${pages} 0 R /Kids [${page} 0 R ${pages} 0 R] /Count 2 >>`);
    return `<< /Type /Pages /Kids [${inner} 0 R] /Count 2 >>`;
  }));
  push('pages-self-kid', pagesDoc((_w, pages, page) => `<< /Type /Pages /Kids [${page} 0 R ${pages} 0 R] /Count 2 >>`));
  push('pages-count-huge', pagesDoc((_w, _pages, page) => `<< /Type /Pages /Kids [${page} 0 R] /Count 1000000000 >>`));
  push('pages-count-zero', pagesDoc((_w, _pages, page) => `<< /Type /Pages /Kids [${page} 0 R ${page} 0 R] /Count 0 >>`));
  push('pages-count-negative', pagesDoc((_w, _pages, page) => `<< /Type /Pages /Kids [${page} 0 R] /Count -5 >>`));
  push('pages-count-low', pagesDoc((_w, _pages, page) => `<< /Type /Pages /Kids [${page} 0 R ${page} 0 R ${page} 0 R] /Count 1 >>`));
  push('pages-same-page-60-times', pagesDoc((_w, _pages, page) => `<< /Type /Pages /Kids [${Array(60).fill(`${page} 0 R`).join(' ')}] /Count 60 >>`));
  push('pages-10000-deep', pagesDoc((w, pages, page) => {
    let child = page;
    for (let i = 0; i < 10_000; i++) {
      const node = w.reserve();
      w.set(node, `<< /Type /Pages /Kids [${child} 0 R] /Count 1 >>`);
      child = node;
    }
    return `<< /Type /Pages /Kids [${child} 0 R] /Count 1 >>`;
  }));
  push('kid-not-a-dict', pagesDoc((_w, _pages, page) => `<< /Type /Pages /Kids [${page} 0 R 99 0 R (x) 5] /Count 4 >>`));

  // forms that draw each other, and one that draws itself
  push('forms-cycle', formCycle(2));
  push('forms-self', formCycle(1));
  push('forms-fanout-2^10', formFanout(10, '@'));
  out.push({ name: 'forms-fanout-2^30', data: formFanout(30, 'x'), pdfjs: false }); // pdfjs: 107 s at 2^20

  // a 5 MB content stream: raw, and deflated; the '@'s are at its very end
  const big = Buffer.concat([Buffer.from('BT /F1 12 Tf '), Buffer.alloc(5 << 20, '0 0 Td '), Buffer.from('(@@FAX 15551234567@@) Tj ET')]);
  push('content-5mb', filteredDoc('', big));
  push('content-5mb-flate', filteredDoc('/Filter /FlateDecode', deflateSync(big)));
  push('content-5mb-strings', filteredDoc('', Buffer.concat([Buffer.from('BT /F1 12 Tf ('), Buffer.alloc(5 << 20, 'x'), Buffer.from('@@@@) Tj ET')])));
  push('content-deep-arrays', onePage(`BT /F1 12 Tf ${'['.repeat(100_000)}(@@@@)${']'.repeat(100_000)} TJ ET`));
  push('content-deep-dicts', onePage(`/P ${'<<'.repeat(50_000)}${'>>'.repeat(50_000)} BDC ${text('(@@@@) Tj')} EMC`));
  push('content-unterminated-string', onePage(text('(@@@@ Tj')));
  push('content-unterminated-hex', onePage(text('<4040 Tj')));
  push('xref-points-to-itself', Buffer.from(onePage(text('(@@@@) Tj')).toString('latin1').replace(/trailer\n<< /, 'trailer\n<< /Prev 9 '), 'latin1'));
  push('object-refers-to-itself', Buffer.from(onePage(text('(@@@@) Tj')).toString('latin1').replace('/Contents 3 0 R', '/Contents 6 0 R /X 6 0 R').replace('xref', '6 0 obj\n6 0 R\nendobj\nxref'), 'latin1'));
  return out;
}

function pagesDoc(root: (w: PdfWriter, pages: number, page: number) => string): Buffer {
  return pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    const c = w.stream('', text('(@@FAX 15551234567@@) Tj'));
    const page = w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >> /Contents ${c} 0 R >>`);
    return root(w, pages, page);
  });
}

/** n forms in a ring, each drawing '@' and then the next. */
function formCycle(n: number): Buffer {
  return pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    const forms = Array.from({ length: n }, () => w.reserve());
    forms.forEach((num, i) => {
      const next = forms[(i + 1) % n]!;
      w.set(num, streamBody(`/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> /XObject << /X ${next} 0 R >> >>`, 'BT /F1 12 Tf (@) Tj ET /X Do'));
    });
    const c = w.stream('', '/X Do');
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X ${forms[0]} 0 R >> >> /Contents ${c} 0 R >>`);
  });
}

/** `levels` of forms, each drawing the next one twice: 2^levels draws of the innermost, which shows `s`. */
function formFanout(levels: number, s: string): Buffer {
  return pdfDoc((w, pages) => {
    const f = w.add(HELVETICA);
    let next = w.stream(`/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 ${f} 0 R >> >>`, `BT /F1 12 Tf (${s}) Tj ET`);
    for (let i = 0; i < levels; i++) next = w.stream(`/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X ${next} 0 R >> >>`, '/X Do /X Do');
    const c = w.stream('', '/X Do');
    return w.add(`<< /Type /Page /Parent ${pages} 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X ${next} 0 R >> >> /Contents ${c} 0 R >>`);
  });
}


// Bytes a mutation writes: PDF syntax more often than noise, and '@' itself.
const SYNTAX = ['@', '(', ')', '\\', '<', '>', '[', ']', '/', '%', ' ', '\n', '0', '9', 'R', 'obj', 'endobj', 'stream', 'endstream', 'Tj', 'TJ', 'Tf', 'BT', 'ET', 'Do', 'q', 'Q', '<<', '>>', '@@@@'];

/**
 * One to four random edits of `pdf`: mostly overwrites, which keep every offset (so the xref still
 * holds and the edit reaches the objects and content streams), a few inserts and deletions.
 */
export function mutate(pdf: Buffer, rand: () => number): Buffer {
  let b = Buffer.from(pdf);
  const edits = 1 + Math.floor(rand() * 4);
  for (let e = 0; e < edits; e++) {
    // nine edits in ten land in the objects, between the header and the (last) xref table
    const table = b.lastIndexOf('\nxref');
    const xref = table >= 0 ? table : b.lastIndexOf('startxref');
    const body = xref > 9 && rand() < 0.9 ? xref - 9 : b.length;
    const at = (body === b.length ? 0 : 9) + Math.floor(rand() * body);
    const kind = rand();
    if (kind < 0.45) {
      b[at] = Math.floor(rand() * 256);
    } else if (kind < 0.92) {
      Buffer.from(SYNTAX[Math.floor(rand() * SYNTAX.length)]!, 'latin1').copy(b, at);
    } else if (kind < 0.95) {
      const s = Buffer.from(SYNTAX[Math.floor(rand() * SYNTAX.length)]!, 'latin1');
      b = Buffer.concat([b.subarray(0, at), s, b.subarray(at)]);
    } else if (kind < 0.98) {
      b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + Math.floor(rand() * 64))]);
    } else {
      const from = Math.floor(rand() * b.length);
      b = Buffer.concat([b.subarray(0, at), b.subarray(from, from + 1 + Math.floor(rand() * 256)), b.subarray(at)]);
    }
  }
  return b;
}
