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
  odfImage,
  odfSection,
  odt,
  rtf,
  rtfField,
} from "../helpers/office-attack.js";

const rel = (id: string, type: string, target: string) => ({ id, type, target, external: true });
const part = (zip: Uint8Array, name: string): string => strFromU8(unzipSync(zip)[name]!);

describe("OOXML", () => {
  it("drops external relationships but keeps a hyperlink and the internal ones", () => {
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
    // the hyperlink alone keeps its TargetMode
    expect(rels.match(/External/g)).toHaveLength(1);
    expect(rels).toContain("https://example.com/");
    expect(rels).toContain("media/image1.png");
    expect(r.removed).toEqual([
      "an external relationship (image)",
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
      "an OLE link",
      "a INCLUDEPICTURE field",
      "a INCLUDEPICTURE field",
      "a INCLUDETEXT field",
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
