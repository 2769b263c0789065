// Office documents that reach outside themselves, through the real LibreOffice, as an attacker
// sends them: each vector points at a canary PDF outside the job (its text must not be in the
// converted PDF) and at an HTTP listener on 127.0.0.x (which must see no request). The document's
// own text must still be there: a refusal or an empty page would pass the canary check for nothing.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import type { OfficeConverter } from "../../src/intake/office/office-convert.js";
import { testOffice } from "../helpers/collaborators.js";
import {
  canaryPdf,
  docx,
  docxField,
  docxPicture,
  fodt,
  HAVE_PDFTOTEXT,
  listener,
  odfImage,
  odfSection,
  odt,
  pdfText,
  rtf,
  rtfField,
  type Listener,
} from "../helpers/office-attack.js";
import { tempFolder } from "../tmp-dir.js";

const HAVE_SOFFICE = findExecutable("soffice") !== null;
if (!HAVE_SOFFICE || !HAVE_PDFTOTEXT)
  console.warn(
    "office-outside: soffice (LibreOffice) or pdftotext (poppler-utils) is not installed; the tests skip (apt-get install libreoffice-writer-nogui poppler-utils)",
  );

const CANARY = `CANARY${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
let dir: string;
let secrets: string;
let canary: string;
let canaryText: string;
let web: Listener;
let office: OfficeConverter;

beforeAll(async () => {
  dir = tempFolder("office-outside");
  // the converter may run as a user of its own (a root daemon's): it must reach its folder below
  chmodSync(dir, 0o711);
  // the "data folder": what other users' faxes look like to an attacker who knows the layout
  secrets = path.join(dir, "data", "documents");
  mkdirSync(secrets, { recursive: true });
  const pdf = await canaryPdf(`${CANARY} secret fax`);
  canary = path.join(secrets, "canary.pdf");
  writeFileSync(canary, pdf);
  canaryText = path.join(secrets, "canary.rtf");
  writeFileSync(canaryText, `{\\rtf1\\ansi ${CANARY} secret text\\par}`);
  web = await listener(pdf);
  office = testOffice({ tmpDir: path.join(dir, "office"), timeoutMs: 60_000 });
});
afterAll(async () => {
  await office?.close();
  await web?.close();
  rmSync(dir, { recursive: true, force: true });
});

const fileUrl = (f: string): string => `file://${f}`;
const rel = (id: string, type: string, target: string) => ({ id, type, target, external: true });

/** Each vector: a document that, converted by a converter that trusts it, fetches `target`. */
const VECTORS: Array<{ name: string; ext: string; build: (file: string, http: string) => Uint8Array }> = [
  {
    name: "docx: picture linked (r:link) to an external file",
    ext: ".docx",
    build: (f) => docx(docxPicture("rId5"), [rel("rId5", "image", fileUrl(f))]),
  },
  {
    name: "docx: picture embedded (r:embed) from an external file",
    ext: ".docx",
    build: (f) => docx(docxPicture("rId5", "r:embed"), [rel("rId5", "image", fileUrl(f))]),
  },
  {
    name: "docx: picture linked to an http URL",
    ext: ".docx",
    build: (_f, u) => docx(docxPicture("rId5"), [rel("rId5", "image", `${u}/image.pdf`)]),
  },
  {
    name: "docx: INCLUDEPICTURE field (simple and complex)",
    ext: ".docx",
    build: (f, u) =>
      docx(docxField(`INCLUDEPICTURE "${fileUrl(f)}" \\d`) + docxField(`INCLUDEPICTURE "${u}/field.pdf" \\d`)),
  },
  {
    name: "docx: INCLUDETEXT field",
    ext: ".docx",
    build: (_f, u) =>
      docx(docxField(`INCLUDETEXT "${canaryText.replace(/\\/g, "\\\\")}"`) + docxField(`INCLUDETEXT "${u}/text.rtf"`)),
  },
  {
    name: "docx: altChunk from an external file",
    ext: ".docx",
    build: (_f, u) =>
      docx('<w:altChunk r:id="rId7"/><w:altChunk r:id="rId8"/>', [
        rel("rId7", "aFChunk", fileUrl(canaryText)),
        rel("rId8", "aFChunk", `${u}/chunk.rtf`),
      ]),
  },
  {
    name: "docx: subDoc from an external file",
    ext: ".docx",
    build: (_f, u) =>
      docx('<w:p><w:subDoc r:id="rId9"/></w:p><w:p><w:subDoc r:id="rId10"/></w:p>', [
        rel("rId9", "subDocument", fileUrl(canaryText)),
        rel("rId10", "subDocument", `${u}/sub.docx`),
      ]),
  },
  {
    name: "odt: linked image (file and http)",
    ext: ".odt",
    build: (f, u) => odt(odfImage(fileUrl(f)) + odfImage(`${u}/odt.pdf`)),
  },
  {
    name: "odt: linked section (file and http)",
    ext: ".odt",
    build: (_f, u) => odt(odfSection(fileUrl(canaryText)) + odfSection(`${u}/section.rtf`)),
  },
  {
    name: "fodt: linked image and section",
    ext: ".fodt",
    build: (f, u) => fodt(odfImage(fileUrl(f)) + odfSection(fileUrl(canaryText)) + odfImage(`${u}/fodt.pdf`)),
  },
  {
    name: "rtf: INCLUDEPICTURE and INCLUDETEXT fields",
    ext: ".rtf",
    build: (f, u) =>
      rtf(
        rtfField(`INCLUDEPICTURE "${fileUrl(f)}" \\d`) +
          rtfField(`INCLUDEPICTURE "${u}/rtf.pdf" \\d`) +
          rtfField(`INCLUDETEXT "${canaryText}"`),
      ),
  },
];

describe.skipIf(!HAVE_SOFFICE || !HAVE_PDFTOTEXT)(
  "an office document cannot make the gateway fetch or embed what its sender chooses",
  () => {
    for (const v of VECTORS) {
      it(v.name, async () => {
        const before = web.requests.length;
        const pdf = await office.convert({ name: `attack${v.ext}`, ext: v.ext, data: v.build(canary, web.url) });
        const text = pdfText(pdf, dir);
        expect(text).toContain("Visible body text");
        // both at once, so that a failure shows what the document reached
        expect({ canaryInPdf: text.includes(CANARY), httpRequests: web.requests.slice(before) }).toEqual({
          canaryInPdf: false,
          httpRequests: [],
        });
      }, 90_000);
    }
  },
);

/** The main vector twice over: a picture linked to the canary file and one linked to the listener. */
const MAIN = (f: string, u: string): Uint8Array =>
  docx(docxPicture("rId5") + docxPicture("rId6"), [
    rel("rId5", "image", fileUrl(f)),
    rel("rId6", "image", `${u}/main.pdf`),
  ]);

describe.skipIf(!HAVE_SOFFICE || !HAVE_PDFTOTEXT)("each protection alone stops the main vector", () => {
  const LAYERS: Array<{ name: string; options: Parameters<typeof testOffice>[0]; needs?: string }> = [
    {
      name: "the stripper alone (default profile, no sandbox)",
      options: { layers: { profile: false }, sandbox: "off" },
    },
    {
      name: "the hardened profile alone (nothing stripped, no sandbox)",
      options: { layers: { strip: false }, sandbox: "off" },
    },
    {
      name: "the sandbox alone (nothing stripped, default profile)",
      options: { layers: { strip: false, profile: false }, sandbox: "required" },
      needs: "bwrap",
    },
  ];
  for (const l of LAYERS) {
    it.skipIf(l.needs !== undefined && findExecutable(l.needs) === null)(
      l.name,
      async () => {
        const one = testOffice({ ...l.options, tmpDir: path.join(dir, `layer-${LAYERS.indexOf(l)}`) });
        try {
          const before = web.requests.length;
          const text = pdfText(
            await one.convert({ name: "attack.docx", ext: ".docx", data: MAIN(canary, web.url) }),
            dir,
          );
          expect(text).toContain("Visible body text");
          expect({ canaryInPdf: text.includes(CANARY), httpRequests: web.requests.slice(before) }).toEqual({
            canaryInPdf: false,
            httpRequests: [],
          });
        } finally {
          await one.close();
        }
      },
      120_000,
    );
  }

  it("with every protection off the vector does reach out (the checks above can fail)", async () => {
    const open = testOffice({
      layers: { strip: false, profile: false },
      sandbox: "off",
      tmpDir: path.join(dir, "layer-none"),
    });
    try {
      const before = web.requests.length;
      const text = pdfText(await open.convert({ name: "attack.docx", ext: ".docx", data: MAIN(canary, web.url) }), dir);
      expect(text.includes(CANARY)).toBe(true);
      expect(web.requests.slice(before)).toContainEqual(expect.stringMatching(/^GET \/main\.pdf LibreOffice/));
    } finally {
      await open.close();
    }
  }, 120_000);

  it.skipIf(findExecutable("bwrap") === null)("says which protections are in force", async () => {
    const p = await office.protections();
    expect(p.ok).toBe(true);
    expect(p.summary.network).toBe("none (bubblewrap)");
    expect(p.summary.files).toMatch(/only the system folders and the job's own folder/);
    if (process.getuid?.() === 0) expect(p.summary.user).toMatch(/^(faxgate-convert|nobody) \(uid \d+\)$/);
    const off = await testOffice({ sandbox: "off" }).protections();
    expect(off.summary.network).toBe("open");
    expect(off.warnings.join(" ")).toMatch(/office\.sandbox is off/);
  });
});

/**
 * The classes of the fourth review (issue 48, item 8), against the stripper as the only layer
 * (default profile, no sandbox): each is a spelling the previous stripper let through, of a
 * construct LibreOffice follows.
 */
const STRIP_ONLY: Array<{ name: string; ext: string; build: (file: string, http: string) => Uint8Array }> = [
  {
    name: "docx: a picture linked (r:link) to a relationship typed as a hyperlink",
    ext: ".docx",
    build: (f, u) =>
      docx(docxPicture("rId5") + docxPicture("rId6"), [
        { id: "rId5", type: "hyperlink", target: `${u}/hyperlink.pdf`, external: true },
        { id: "rId6", type: "hyperlink", target: fileUrl(f), external: true },
      ]),
  },
  {
    name: "odt: a linked image whose tag has a non-ASCII attribute name before xlink:href",
    ext: ".odt",
    build: (f, u) =>
      odt(
        odfImage(fileUrl(f)).replace("<draw:image ", '<draw:image \u00f1="1" ') +
          odfImage(`${u}/odt-name.pdf`).replace("<draw:image ", '<draw:image \u00f1="1" '),
      ),
  },
  {
    name: "rtf: INCLUDEPICTURE inside an IF, and \\fldinst after another control word",
    ext: ".rtf",
    build: (f, u) =>
      rtf(
        `{\\field{\\*\\fldinst IF 1 = 1 "{\\field{\\*\\fldinst INCLUDEPICTURE "${fileUrl(f)}" \\\\d}{\\fldrslt }}" ""}{\\fldrslt x}}` +
          `{\\field{\\b\\fldinst INCLUDEPICTURE "${u}/rtf-b.pdf" \\\\d}{\\fldrslt y}}` +
          `{\\field{\\*\\ul\\fldinst INCLUDEPICTURE "${fileUrl(f)}" \\\\d}{\\fldrslt z}}`,
      ),
  },
  {
    name: "rtf: INCLUDEPICTURE spelt with \\u and a fallback character",
    ext: ".rtf",
    build: (f, u) =>
      rtf(
        `{\\field{\\*\\fldinst \\u73 XNCLUDEPICTURE "${fileUrl(f)}" \\\\d}{\\fldrslt x}}` +
          `{\\field{\\*\\fldinst \\u73 XNCLUDEPICTURE "${u}/rtf-u.pdf" \\\\d}{\\fldrslt y}}`,
      ),
  },
  {
    name: "odt: a form button's image (form:image-data) from a file and a URL",
    ext: ".odt",
    build: (f, u) =>
      odt(
        `<office:forms><form:form xmlns:form="urn:oasis:names:tc:opendocument:xmlns:form:1.0" form:name="F"><form:button form:name="B" form:id="b1" form:image-data="${fileUrl(f)}" form:label="x"/><form:button form:name="C" form:id="b2" form:image-data="${u}/button.pdf" form:label="y"/></form:form></office:forms>` +
          '<text:p><draw:control xmlns:form="urn:oasis:names:tc:opendocument:xmlns:form:1.0" text:anchor-type="as-char" svg:width="10cm" svg:height="10cm" draw:control="b1"/><draw:control text:anchor-type="as-char" svg:width="10cm" svg:height="10cm" draw:control="b2"/></text:p>',
      ),
  },
];

describe.skipIf(!HAVE_SOFFICE || !HAVE_PDFTOTEXT)(
  "the stripper alone holds against the fourth review's classes",
  () => {
    let alone: OfficeConverter;
    beforeAll(() => {
      alone = testOffice({ layers: { profile: false }, sandbox: "off", tmpDir: path.join(dir, "strip-only") });
    });
    afterAll(async () => {
      await alone?.close();
    });
    for (const v of STRIP_ONLY) {
      it(v.name, async () => {
        const before = web.requests.length;
        const pdf = await alone.convert({ name: `attack${v.ext}`, ext: v.ext, data: v.build(canary, web.url) });
        const text = pdfText(pdf, dir);
        expect(text).toContain("Visible body text");
        expect({ canaryInPdf: text.includes(CANARY), httpRequests: web.requests.slice(before) }).toEqual({
          canaryInPdf: false,
          httpRequests: [],
        });
      }, 120_000);
    }
  },
);
