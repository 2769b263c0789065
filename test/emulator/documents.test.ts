// Faxes are real documents: cover page first, then each attachment in order, page counts that a
// PDF reader agrees with, and types decided by content.
import { createRequire } from "node:module";
import { encode as encodePng } from "@cantoo/pdf-lib/upng";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, pageCount, pdfWithPages, type Api } from "./api.js";

let emu: TestEmulator;
let api: Api;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = apiFor(emu);
});
afterAll(async () => {
  await api.close();
  await emu.stop();
});

async function pageTexts(pdf: Uint8Array): Promise<string[]> {
  const pdfjs = await import("pdfjs-dist/legacy/build/pdf.mjs");
  const doc = await pdfjs.getDocument({
    data: new Uint8Array(pdf),
    useSystemFonts: false,
    isEvalSupported: false,
    verbosity: 0,
  }).promise;
  const out: string[] = [];
  for (let i = 1; i <= doc.numPages; i++) {
    const content = await (await doc.getPage(i)).getTextContent();
    out.push(content.items.map((it) => ("str" in it ? it.str : "")).join(" "));
  }
  await doc.destroy();
  return out;
}

function png(w: number, h: number): Uint8Array {
  const rgba = new Uint8Array(w * h * 4).map((_, i) => (i % 4 === 3 ? 255 : (i * 7) % 256));
  return new Uint8Array(encodePng([rgba.buffer], w, h, 0));
}

// 1x1 baseline JPEG
const JPEG = Buffer.from(
  "/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=",
  "base64",
);

function tiff(w: number, h: number): Uint8Array {
  const UTIF = createRequire(import.meta.url)("utif") as {
    encodeImage(rgba: Uint8Array, w: number, h: number): ArrayBuffer;
  };
  return new Uint8Array(UTIF.encodeImage(new Uint8Array(w * h * 4).fill(200), w, h));
}

async function sendAndDownload(
  fields: Record<string, string>,
  files: Array<[string, Uint8Array | string, string?]>,
): Promise<{ fax: { pagesCount: number }; pdf: Buffer }> {
  const r = await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550102020", ...fields }, files));
  expect(r.status, r.text).toBe(200);
  const d = await api.get(`/v1/fax/${r.json.messageId}/download`, TEST_KEYS.alice);
  expect(d.status).toBe(200);
  return { fax: r.json, pdf: d.bytes };
}

describe("page counts", () => {
  it("PDF pages are copied, in order, and counted", async () => {
    const { fax, pdf } = await sendAndDownload({}, [
      ["three.pdf", await pdfWithPages(3), "application/pdf"],
      ["two.pdf", await pdfWithPages(2), "application/pdf"],
    ]);
    expect(fax.pagesCount).toBe(5);
    expect(await pageCount(pdf)).toBe(5);
  });

  it("a cover page comes first and counts; attachments follow in order", async () => {
    const { fax, pdf } = await sendAndDownload(
      { coverPage: "true", recipientName: "Dr. Who", subject: "Results", notes: "Please call back." },
      [
        ["one.pdf", await pdfWithPages(1)],
        ["note.txt", "typed note", "text/plain"],
      ],
    );
    expect(fax.pagesCount).toBe(3);
    const pages = await pageTexts(pdf);
    expect(pages).toHaveLength(3);
    expect(pages[0]).toContain("Dr. Who");
    expect(pages[0]).toContain("+15550102020");
    expect(pages[0]).toContain("Results");
    expect(pages[0]).toContain("Please call back.");
    expect(pages[0]).toContain("Alice Archer");
    expect(pages[1]).toContain("page 1");
    expect(pages[2]).toContain("typed note");
  });

  it("a cover page alone is a fax of one page", async () => {
    const { fax, pdf } = await sendAndDownload({ coverPage: "true" }, []);
    expect(fax.pagesCount).toBe(1);
    expect(await pageCount(pdf)).toBe(1);
  });

  it("images are one page each (PNG, JPEG, TIFF)", async () => {
    const { fax, pdf } = await sendAndDownload({}, [
      ["a.png", png(40, 30), "image/png"],
      ["b.jpg", JPEG, "image/jpeg"],
      ["c.tif", tiff(20, 20), "image/tiff"],
    ]);
    expect(fax.pagesCount).toBe(3);
    expect(await pageCount(pdf)).toBe(3);
  });

  it("plain text is typeset with page breaks: 130 lines are three pages", async () => {
    const text = Array.from({ length: 130 }, (_, i) => `line ${i + 1}`).join("\n");
    const { fax, pdf } = await sendAndDownload({}, [["long.txt", text, "text/plain"]]);
    expect(fax.pagesCount).toBe(3);
    expect(await pageCount(pdf)).toBe(3);
  });

  it("long lines wrap, form feeds break pages, and text outside WinAnsi does not crash", async () => {
    const text = `${"word ".repeat(400)}\n\f日本語のテキスト 🙂 Ωmega – “quotes” €5\n`;
    const { fax } = await sendAndDownload({}, [["mixed.txt", text, "text/plain"]]);
    expect(fax.pagesCount).toBe(2);
  });

  it("the type comes from the content: a PDF sent as octet-stream is still a PDF", async () => {
    const { fax } = await sendAndDownload({}, [["scan", await pdfWithPages(4), "application/octet-stream"]]);
    expect(fax.pagesCount).toBe(4);
  });
});

describe("refused types", () => {
  const docx = Buffer.concat([Buffer.from("PK\x03\x04", "latin1"), Buffer.alloc(200, 1)]);

  it("an office document gets a 400 that names its type", async () => {
    const r = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550102020" }, [
        ["report.docx", docx, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
      ]),
    );
    expect(r.status).toBe(400);
    expect(r.json.error.name).toBe("InvalidInputError");
    expect(r.json.error.message).toContain("application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    expect(r.json.error.message).toContain("report.docx");
  });

  it("a GIF or binary junk is refused; a broken PDF too", async () => {
    const gif = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550102020" }, [["x.gif", "GIF89a\x01\x00\x01\x00", "image/gif"]]),
    );
    expect(gif.status).toBe(400);
    expect(gif.json.error.message).toContain("image/gif");
    const junk = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550102020" }, [["x.bin", new Uint8Array([0, 1, 2, 3, 0, 0, 9])]]),
    );
    expect(junk.status).toBe(400);
    const broken = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550102020" }, [["x.pdf", "%PDF-1.4 this is not a pdf", "application/pdf"]]),
    );
    expect(broken.status).toBe(400);
    const empty = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550102020" }, [["x.txt", "", "text/plain"]]),
    );
    expect(empty.status).toBe(400);
  });

  it("send to many: each recipient gets an error naming the type, nothing is sent", async () => {
    const r = await api.call(
      "POST",
      "/v1/faxes/multiple",
      TEST_KEYS.alice,
      form({ recipientFax: "+15550102020,+15550102021" }, [["report.docx", docx, "application/msword"]]),
    );
    expect(r.status).toBe(200);
    expect(r.json.success).toEqual([]);
    expect(r.json.errors).toHaveLength(2);
    for (const e of r.json.errors) expect(e.error).toMatch(/^InvalidInputError: .*application\/msword/);
  });
});

describe("send to many", () => {
  it("sends the same document to numbers and to contacts, with per-recipient errors", async () => {
    const contacts = (await api.get("/v1/contacts?limit=100", TEST_KEYS.alice)).json.rows as Array<{
      uuid: string;
      name: string;
      isOrganization: boolean;
    }>;
    const billing = contacts.find((c) => c.name === "Acme Billing")!;
    const globex = contacts.find((c) => c.name === "Globex")!;
    const r = await api.call(
      "POST",
      "/v1/faxes/multiple",
      TEST_KEYS.alice,
      form({ recipientFax: "+15550103030", recipientContacts: `${billing.uuid},${globex.uuid},no-such-contact` }, [
        ["two.pdf", await pdfWithPages(2)],
      ]),
    );
    expect(r.status).toBe(200);
    expect(r.json.success.map((f: { faxNumber: string }) => f.faxNumber)).toEqual(["+15550103030", "+15550100100"]);
    expect(r.json.success[1].recipientName).toBe("Acme Billing");
    expect(r.json.success.every((f: { pagesCount: number }) => f.pagesCount === 2)).toBe(true);
    expect(r.json.errors).toHaveLength(2);
    expect(r.json.errors[0].error).toMatch(/no fax number/);
    expect(r.json.errors[1].error).toMatch(/^NotFoundError/);
  });
});
