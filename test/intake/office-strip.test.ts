// The stripper on its own (no LibreOffice): what it removes from each format, what it keeps, and
// the documents it refuses rather than pass on unread. The end-to-end proof that nothing is fetched
// is office-outside.test.ts; these are the variants an attacker would try next.
import { strFromU8, strToU8, unzipSync, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { StripError, stripExternalReferences } from "../../src/intake/office/office-strip.js";
import {
  docx,
  docxField,
  docxPicture,
  fodt,
  ods,
  odfImage,
  odfSection,
  odt,
  rtf,
  rtfField,
  xlsx,
} from "../helpers/office-attack.js";

const rel = (id: string, type: string, target: string) => ({ id, type, target, external: true });
const part = (zip: Uint8Array, name: string): string => strFromU8(unzipSync(zip)[name]!);

describe("OOXML", () => {
  it("drops external relationships, hyperlinks too, and keeps the internal ones", () => {
    const doc = docx(docxPicture("rId5"), [
      rel("rId5", "image", "file:///srv/faxgate/documents/x.pdf"),
      rel("rId6", "hyperlink", "https://example.com/"),
      rel("rId7", "attachedTemplate", "file:///x.dotm"),
      rel("rId8", "oleObject", "\\\\server\\share\\x.xls"),
      { id: "rId9", type: "image", target: "media/image1.png" },
      { id: "rId10", type: "image", target: "../../../../etc/x.png" },
    ]);
    const r = stripExternalReferences(doc);
    const rels = part(r.data, "word/_rels/document.xml.rels");
    expect(rels).not.toMatch(/file:|server|etc\/x/);
    // a hyperlink goes too: a picture can name it by its id (see "a picture linked to a hyperlink")
    expect(rels).not.toMatch(/External|example\.com/);
    expect(rels).toContain("media/image1.png");
    expect(r.removed).toEqual([
      "an external relationship (image)",
      "an external relationship (hyperlink)",
      "an external relationship (attachedTemplate)",
      "an external relationship (oleObject)",
      "an external relationship (image)",
    ]);
    expect(part(r.data, "word/document.xml")).toContain("Visible body text");
  });

  it("sees through entity-encoded attributes, other prefixes and single quotes", () => {
    const doc = zipSync({
      "word/_rels/document.xml.rels": strToU8(
        `<x:Relationships xmlns:x="http://schemas.openxmlformats.org/package/2006/relationships"><x:Relationship Id='rId5' Type='http://schemas.openxmlformats.org/officeDocument/2006/relationships/image' Target='&#102;ile:///x.pdf' TargetMode = '&#69;xternal'/></x:Relationships>`,
      ),
    });
    expect(part(stripExternalReferences(doc).data, "word/_rels/document.xml.rels")).not.toMatch(/ile:|xternal/);
  });

  it("blanks fetching fields, simple and complex, also split over runs and nested, and keeps the others", () => {
    const split =
      '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>INCL</w:instrText></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>QUOTE x</w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r><w:r><w:instrText>UDEPICTURE "http://127.0.0.9/a.png"</w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>shown</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>';
    const doc = docx(
      docxField('INCLUDETEXT "/srv/x.docx"') +
        docxField(' link Excel.Sheet.8 "C:\\\\x.xls" ') +
        split +
        docxField("PAGE"),
    );
    const r = stripExternalReferences(doc);
    const xml = part(r.data, "word/document.xml");
    expect(xml).not.toMatch(/INCLUDETEXT|srv|Excel|INCL|UDEPICTURE|127\.0\.0\.9/);
    expect(xml).toContain("QUOTE x");
    expect(xml).toContain("PAGE");
    expect(xml).toContain("shown");
    expect(r.removed.sort()).toEqual([
      "a INCLUDEPICTURE field",
      "a INCLUDETEXT field",
      "a INCLUDETEXT field",
      "a LINK field",
      "a LINK field",
    ]);
  });

  it("an instruction hidden in CDATA is judged as the text it is", () => {
    const cdata =
      '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText><![CDATA[INCLUDEPICTURE "file:///srv/x.pdf" \\d]]></w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>';
    const r = stripExternalReferences(docx(cdata));
    expect(part(r.data, "word/document.xml")).not.toMatch(/srv|INCLUDEPICTURE/);
    expect(r.removed).toEqual(["a INCLUDEPICTURE field"]);
  });

  it("rewrites a package inside the package (an embedded .docx)", () => {
    const inner = docx(docxPicture("rId5"), [rel("rId5", "image", "file:///x.pdf")]);
    const outer = zipSync({ "word/document.xml": strToU8("<w:document/>"), "word/embeddings/inner.docx": inner });
    const r = stripExternalReferences(outer);
    expect(part(unzipSync(r.data)["word/embeddings/inner.docx"]!, "word/_rels/document.xml.rels")).not.toContain(
      "file:",
    );
  });
});

describe("ODF and flat XML", () => {
  it("removes linked images, section sources and DDE, keeps web hyperlinks and internal pictures", () => {
    const body = `${odfImage("file:///srv/x.pdf") + odfImage("Pictures/inside.png") + odfImage("../outside.pdf") + odfSection("http://127.0.0.9/s.odt")}<text:p><text:a xlink:href="https://example.com/">site</text:a><text:a xlink:href="file:///etc/passwd">f</text:a></text:p><office:dde-source office:dde-application="soffice" office:dde-topic="/srv/x.ods" office:dde-item="A1"/>`;
    for (const doc of [odt(body), fodt(body)]) {
      const r = stripExternalReferences(doc);
      const xml = r.kind === "zip" ? part(r.data, "content.xml") : strFromU8(r.data);
      expect(xml).not.toMatch(/srv|outside|127\.0\.0\.9|etc\/passwd/);
      expect(xml).toContain("Pictures/inside.png");
      expect(xml).toContain("https://example.com/");
      if (r.kind === "zip")
        expect(strFromU8(unzipSync(r.data).mimetype!)).toBe("application/vnd.oasis.opendocument.text");
    }
  });

  it("refuses XML that declares entities (they could spell out a link, or read a file)", () => {
    const xxe = strToU8(
      '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><office:document>&x;</office:document>',
    );
    expect(() => stripExternalReferences(xxe)).toThrow(StripError);
    expect(() => stripExternalReferences(zipSync({ "content.xml": xxe }))).toThrow(/declares XML entities/);
  });

  it("writes back every byte it did not rewrite, whatever the declared encoding", () => {
    const latin1 = Buffer.from(
      '<?xml version="1.0" encoding="ISO-8859-1"?><office:document xmlns:xlink="http://www.w3.org/1999/xlink"><text:p t="caf\xe9 &#8364;">na\xefve</text:p><draw:image xlink:href="file:///srv/x.pdf"/></office:document>',
      "latin1",
    );
    const out = Buffer.from(stripExternalReferences(latin1).data);
    expect(out.toString("latin1")).toBe(latin1.toString("latin1").replace(' xlink:href="file:///srv/x.pdf"', ""));
  });
});

describe("RTF", () => {
  it("blanks fetching fields, also written with hex and unicode escapes, and turns object links into embeddings", () => {
    const hex = '{\\field{\\*\\fldinst {\\\'49NCLUDEPICTURE "file:///srv/x.pdf"}}{\\fldrslt {a}}}';
    const uni = '{\\field{\\*\\fldinst {\\u73 ?NCLUDETEXT "/srv/x.rtf"}}{\\fldrslt {b}}}';
    const obj = "{\\object\\objautlink\\objw100\\objh100{\\*\\objclass Excel.Sheet.8}{\\result {c}}}";
    const doc = rtf(rtfField('INCLUDEPICTURE "http://127.0.0.9/x.png" \\d') + hex + uni + obj + rtfField("PAGE"));
    const r = stripExternalReferences(doc);
    const text = Buffer.from(r.data).toString("latin1");
    expect(text).not.toMatch(/127\.0\.0\.9|srv|objautlink/);
    expect(text).toContain("PAGE");
    expect(text).toContain("\\objemb");
    expect(r.removed).toEqual([
      "a INCLUDEPICTURE field",
      "a INCLUDEPICTURE field",
      "a INCLUDETEXT field",
      "an OLE link",
    ]);
  });

  it("does not lose its way over \\bin data holding braces", () => {
    const doc = rtf(`{\\*\\blob \\bin4 }}{{}${rtfField('INCLUDEPICTURE "file:///srv/x.pdf"')}`);
    expect(Buffer.from(stripExternalReferences(doc).data).toString("latin1")).not.toContain("srv");
  });
});

describe("what cannot be read is refused, not passed on", () => {
  it("a damaged zip, and one that unpacks past the limit", () => {
    const good = docx("");
    expect(() => stripExternalReferences(good.subarray(0, good.length - 30))).toThrow(
      /zip structure could not be read/,
    );
    // a zip bomb says what it unpacks to in its directory: that is checked before anything is unpacked
    const big = Buffer.from(zipSync({ "word/document.xml": new Uint8Array(1024) }));
    const dir = big.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    big.writeUInt32LE(300 * 1024 * 1024, dir + 24);
    expect(() => stripExternalReferences(big)).toThrow(/unpacks to more than 256 MB/);
  });

  it("a binary format is left as it is (the profile and the sandbox are its protection)", () => {
    const ole = new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0]);
    expect(stripExternalReferences(ole)).toEqual({ data: ole, removed: [], kind: "binary" });
  });
});

// The classes an adversarial review found (issue 48, item 8): each sample is one member; the
// variants around it are the rest of its class.
describe("RTF fields however they are nested or spelt", () => {
  const out = (doc: Uint8Array) => Buffer.from(stripExternalReferences(doc).data).toString("latin1");

  it("an INCLUDEPICTURE inside an IF, and fields nested deeper, are blanked", () => {
    const inIf = `{\\field{\\*\\fldinst IF 1 = 1 "{\\field{\\*\\fldinst INCLUDEPICTURE "file:///srv/a.pdf" \\\\d}{\\fldrslt }}" ""}{\\fldrslt shownA}}`;
    const deeper = `{\\field{\\*\\fldinst QUOTE {\\field{\\*\\fldinst IF {\\field{\\*\\fldinst INCLUDETEXT "/srv/b.rtf"}{\\fldrslt }} = 1 "x"}{\\fldrslt }}}{\\fldrslt shownB}}`;
    const r = stripExternalReferences(rtf(inIf + deeper + rtfField("PAGE")));
    const text = Buffer.from(r.data).toString("latin1");
    expect(text).not.toMatch(/srv|INCLUDE/);
    expect(text).toMatch(/shownA[\s\S]*shownB[\s\S]*PAGE/);
    expect(r.removed).toEqual(["a INCLUDEPICTURE field", "a INCLUDETEXT field"]);
  });

  it("an instruction whose destination word is not first in its group, or is split over groups", () => {
    const notFirst = '{\\field{\\b\\fldinst INCLUDEPICTURE "file:///srv/c.pdf"}{\\fldrslt c}}';
    const starLater = '{\\field{\\*\\ul\\fldinst INCLUDEPICTURE "http://127.0.0.9/d.png"}{\\fldrslt d}}';
    const split = '{\\field{\\*\\fldinst INCLUDEPIC}{\\*\\fldinst TURE "file:///srv/e.pdf"}{\\fldrslt e}}';
    const inner = '{\\field{\\*\\fldinst {\\b INCLUDE}{\\i PICTURE} "file:///srv/f.pdf"}{\\fldrslt f}}';
    const upper = '{\\FIELD{\\*\\FLDINST INCLUDEPICTURE "file:///srv/f2.pdf"}{\\fldrslt f2}}';
    expect(out(rtf(notFirst + starLater + split + inner + upper))).not.toMatch(/srv|127\.0\.0\.9/);
  });

  it("an instruction spelt with \\u and the fallback characters \\uc says to skip", () => {
    const uc1 = '{\\field{\\*\\fldinst \\u73 XNCLUDEPICTURE "file:///srv/g.pdf"}{\\fldrslt g}}';
    const uc2 = '{\\field{\\*\\fldinst \\uc2\\u73 \\\'41YNCLUDETEXT "/srv/h.rtf"}{\\fldrslt h}}';
    expect(out(rtf(uc1 + uc2))).not.toMatch(/srv/);
  });

  it("a picture name set in a group with other words first", () => {
    const doc = rtf("{\\shp{\\*\\shpinst{\\sp{\\sn pibName}{\\b\\sv file:///srv/i.png}}}}");
    expect(out(doc)).not.toContain("srv");
  });

  it("a field instruction that would take the whole document is refused", () => {
    expect(() => stripExternalReferences(rtf('\\fldinst INCLUDEPICTURE "file:///srv/j.pdf"'))).toThrow(StripError);
  });
});

describe("ODF: every attribute that can hold a URL", () => {
  it("form:image-data, xml:base, template and event links, fonts, backgrounds, linked sheets, and any attribute naming a scheme", () => {
    const body =
      '<form:form form:name="f"><form:button form:name="b" form:image-data="file:///srv/k.png"/></form:form>' +
      '<text:p xml:base="file:///srv/"><draw:frame><draw:image xlink:href="l.png"/></draw:frame></text:p>' +
      '<office:event-listeners><script:event-listener script:event-name="dom:load" xlink:href="vnd.sun.star.script:Standard.M.Main?location=document"/></office:event-listeners>' +
      '<style:background-image xlink:href="http://127.0.0.9/bg.png"/>' +
      '<svg:font-face-uri xlink:href="file:///srv/font.ttf"/>' +
      '<table:table-source xlink:href="file:///srv/m.ods" table:table-name="S"/>' +
      '<table:cell-range-source xlink:href="http://127.0.0.9/range.html" table:filter-name="calc_HTML_WebQuery"/>' +
      '<draw:plugin draw:mime-type="x" loext:data="file:///srv/plug"/>' +
      '<text:p><text:a xlink:href="https://example.com/">kept link</text:a></text:p>';
    for (const doc of [odt(body), fodt(body)]) {
      const r = stripExternalReferences(doc);
      const xml = r.kind === "zip" ? part(r.data, "content.xml") : strFromU8(r.data);
      expect(xml).not.toMatch(/srv|127\.0\.0\.9|vnd\.sun\.star/);
      expect(xml).toContain("https://example.com/");
      expect(xml).toContain("kept link");
    }
  });

  it("a tag a parser reads is judged whatever its attribute names are written in", () => {
    const doc = odt('<draw:frame><draw:image \u00f1="1" xlink:href="file:///srv/n.pdf"/></draw:frame>');
    expect(part(stripExternalReferences(doc).data, "content.xml")).not.toContain("srv");
  });

  it("XML that does not read as XML is refused rather than half-judged", () => {
    expect(() => stripExternalReferences(odt('<draw:image a="1"xlink:href="file:///srv/o.pdf"/>'))).toThrow(
      /its XML could not be read/,
    );
  });

  it("spreadsheet formulas that fetch or read another file lose the formula and keep the saved value", () => {
    const cells = [
      '<table:table-cell table:formula="of:=COM.MICROSOFT.WEBSERVICE(&quot;http://127.0.0.9/ws&quot;)" office:value-type="string" office:string-value="saved1"><text:p>saved1</text:p></table:table-cell>',
      '<table:table-cell table:formula="of:=[\'file:///srv/p.ods\'#$Sheet1.A1]" office:value-type="float" office:value="2"><text:p>2</text:p></table:table-cell>',
      '<table:table-cell table:formula="of:=DDE(&quot;soffice&quot;;&quot;/srv/q.ods&quot;;&quot;A1&quot;)"><text:p>saved3</text:p></table:table-cell>',
      '<table:table-cell table:formula="of:=INDIRECT(&quot;&apos;fi&quot;&amp;&quot;le:///srv/r.ods&apos;#$Sheet1.A1&quot;)"><text:p>saved4</text:p></table:table-cell>',
      '<table:table-cell table:formula="of:=SUM([.A1:.A3])" office:value-type="float" office:value="6"><text:p>6</text:p></table:table-cell>',
    ];
    const named =
      '<table:named-expressions><table:named-range table:name="x" table:base-cell-address="$Sheet1.$A$1" table:cell-range-address="\'file:///srv/s.ods\'#$Sheet1.$A$1"/></table:named-expressions>';
    const r = stripExternalReferences(ods(cells, { before: named }));
    const xml = part(r.data, "content.xml");
    expect(xml).not.toMatch(/srv|127\.0\.0\.9|WEBSERVICE|DDE|INDIRECT/);
    expect(xml).toContain("of:=SUM([.A1:.A3])");
    for (const v of ["saved1", "saved3", "saved4", 'office:value="2"']) expect(xml).toContain(v);
  });

  it("a document setting that would update links on load is removed", () => {
    const settings = zipSync({
      "settings.xml": strToU8(
        '<office:document-settings xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:config="urn:oasis:names:tc:opendocument:xmlns:config:1.0"><office:settings><config:config-item-set config:name="ooo:configuration-settings"><config:config-item config:name="LinkUpdateMode" config:type="short">2</config:config-item><config:config-item config:name="PrinterName" config:type="string">p</config:config-item></config:config-item-set></office:settings></office:document-settings>',
      ),
    });
    const xml = part(stripExternalReferences(settings).data, "settings.xml");
    expect(xml).not.toContain("LinkUpdateMode");
    expect(xml).toContain("PrinterName");
  });

  it("a picture carried as base64 in flat XML is judged as the document it is", () => {
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><image xlink:href="file:///srv/t.png" width="10" height="10"/></svg>',
    ).toString("base64");
    const doc = fodt(
      `<text:p><draw:frame><draw:image><office:binary-data>${svg}</office:binary-data></draw:image></draw:frame></text:p>`,
    );
    const xml = strFromU8(stripExternalReferences(doc).data);
    const inner = Buffer.from(/<office:binary-data>([^<]*)</.exec(xml)![1]!, "base64").toString();
    expect(inner).not.toContain("srv");
    expect(inner).toContain("<svg");
  });
});

describe("SVG parts: references, style sheets and data", () => {
  const SVG = (inside: string, head = "") =>
    `<?xml version="1.0"?>${head}<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100"><defs><linearGradient id="g"/></defs>${inside}</svg>`;
  const PNG = "data:image/png;base64,iVBORw0KGgo=";

  it("removes @import and url() with a scheme, relative pictures and uses, xml-stylesheet, document data: URLs; keeps fragments and raster data", () => {
    const inner = SVG(
      `<style>@import url(file:///srv/a.css); .x { fill: url(http://127.0.0.9/b.svg#g) }</style>` +
        `<style>.y { fill: url(#g) }</style>` +
        `<style>@\\69mport "http://127.0.0.9/c.css";</style>` +
        `<rect style="fill:url('file:///srv/d.svg#g')" width="1" height="1"/>` +
        `<rect fill="url(http://127.0.0.9/e.svg#g)" width="1" height="1"/>` +
        `<rect fill="url(#g)" width="2" height="2"/>` +
        `<image href="secret.png" width="1" height="1"/>` +
        `<image xlink:href="data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><image href="file:///srv/f.png"/></svg>').toString("base64")}"/>` +
        `<image xlink:href="${PNG}" width="1" height="1"/>` +
        `<use xlink:href="other.svg#a"/><use xlink:href="#g"/>` +
        `<foreignObject width="10" height="10"><div xmlns="http://www.w3.org/1999/xhtml"><img src="file:///srv/g.png"/><link rel="stylesheet" href="http://127.0.0.9/h.css"/></div></foreignObject>`,
      '<?xml-stylesheet type="text/css" href="file:///srv/i.css"?>',
    );
    const doc = docx(docxPicture("rId5", "r:embed"), [{ id: "rId5", type: "image", target: "media/image1.svg" }]);
    // with a byte order mark, as some editors write it: still an SVG picture
    const withSvg = zipSync({ ...unzipSync(doc), "word/media/image1.svg": strToU8(`\ufeff${inner}`) });
    const svg = part(stripExternalReferences(withSvg).data, "word/media/image1.svg");
    expect(svg).not.toMatch(/srv|127\.0\.0\.9|secret\.png|other\.svg|svg\+xml|import/);
    expect(svg).toContain(".y { fill: url(#g) }");
    expect(svg).toContain('fill="url(#g)"');
    expect(svg).toContain('xlink:href="#g"');
    expect(svg).toContain(PNG);
  });
});

describe("OOXML relationships, read with an XML parser", () => {
  it("a picture linked to a relationship typed as a hyperlink is not loaded", () => {
    const doc = docx(docxPicture("rId5"), [
      { id: "rId5", type: "hyperlink", target: "http://127.0.0.9/u.pdf", external: true },
    ]);
    expect(part(stripExternalReferences(doc).data, "word/_rels/document.xml.rels")).not.toContain("127.0.0.9");
  });

  it("sees every relationship a parser sees, and keeps internal targets above the part's folder", () => {
    const rels = `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId5" \u00f1="1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="file:///srv/v.pdf" TargetMode="External"/><!-- a comment --><Relationship Id="rId6" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="../media/image1.png"/><Relationship Id="rId7" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="../../../../srv/w.png"/><Relationship Id="rId8" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout" Target="/ppt/slideLayouts/slideLayout1.xml"/><Relationship Id="rId9" Type="x" Target="media/x.png" TargetMode="external "/></Relationships>`;
    const pptx = zipSync({
      "ppt/slides/_rels/slide1.xml.rels": strToU8(rels),
      "ppt/slides/slide1.xml": strToU8("<p:sld/>"),
    });
    const r = stripExternalReferences(pptx);
    const out = part(r.data, "ppt/slides/_rels/slide1.xml.rels");
    expect(out).not.toMatch(/srv|External|external/);
    expect(out).toContain('Target="../media/image1.png"');
    expect(out).toContain('Target="/ppt/slideLayouts/slideLayout1.xml"');
    expect(r.removed).toHaveLength(3);
  });

  it("an externalLink part, an OLE object, an attached template and a frame point at nothing", () => {
    const doc = xlsx(['<c r="@"><f>[1]Sheet1!A1</f><v>5</v></c>'], {
      externalLink: "file:///srv/x.xlsx",
      parts: {
        "xl/worksheets/_rels/sheet1.xml.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/oleObject" Target="\\\\srv\\share\\y.xls" TargetMode="External"/><Relationship Id="rId4" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/frame" Target="http://127.0.0.9/frame.html" TargetMode="External"/></Relationships>`,
      },
    });
    const r = stripExternalReferences(doc);
    for (const p of ["xl/externalLinks/_rels/externalLink1.xml.rels", "xl/worksheets/_rels/sheet1.xml.rels"])
      expect(part(r.data, p)).not.toMatch(/srv|127\.0\.0\.9|External/);
  });
});

describe("OOXML spreadsheets and documents: formulas and instructions", () => {
  it("formulas that fetch or name another file lose the formula, keep the saved value", () => {
    const doc = xlsx(
      [
        '<c r="@" t="str"><f>_xlfn.WEBSERVICE("http://127.0.0.9/x")</f><v>saved1</v></c>',
        '<c r="@"><f>[1]Sheet1!A1</f><v>2</v></c>',
        "<c r=\"@\"><f>'file:///srv/[x.xlsx]Sheet1'!A1</f><v>3</v></c>",
        "<c r=\"@\"><f>cmd|' /C calc'!A0</f><v>4</v></c>",
        '<c r="@" t="str"><f>_xlfn.FILTERXML(_xlfn.WEBSERVICE("http://127.0.0.9/y"),"//a")</f><v>saved5</v></c>',
        '<c r="@"><f>SUM(A1:A3)</f><v>6</v></c>',
        '<c r="@" t="str"><f>A1&amp;"/"&amp;B1&amp;COUNTIF(A:A,"#N/A")</f><v>7</v></c>',
      ],
      {
        parts: {
          "xl/workbook.xml": `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets><definedNames><definedName name="w">_xlfn.WEBSERVICE("http://127.0.0.9/z")</definedName><definedName name="ok">Sheet1!$A$1</definedName></definedNames></workbook>`,
        },
      },
    );
    const r = stripExternalReferences(doc);
    const sheet = part(r.data, "xl/worksheets/sheet1.xml");
    expect(sheet).not.toMatch(/WEBSERVICE|127\.0\.0\.9|srv|\[1\]|cmd/);
    // string literals with a slash or a # are not references
    expect(sheet).toContain("<f>SUM(A1:A3)</f>");
    expect(sheet).toContain('<f>A1&amp;"/"&amp;B1&amp;COUNTIF(A:A,"#N/A")</f>');
    for (const v of ["saved1", "<v>2</v>", "<v>3</v>", "<v>4</v>", "saved5"]) expect(sheet).toContain(v);
    const wb = part(r.data, "xl/workbook.xml");
    expect(wb).not.toContain("WEBSERVICE");
    expect(wb).toContain("Sheet1!$A$1");
  });

  it("an instruction a comment splits is judged as the parser joins it", () => {
    const doc = docx(
      '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>INCLUDEPIC<!-- x -->TURE "file:///srv/aa.pdf"</w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>' +
        '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:delInstrText>INCLUDETEXT "/srv/ab.docx"</w:delInstrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>',
    );
    expect(part(stripExternalReferences(doc).data, "word/document.xml")).not.toContain("srv");
  });
});
