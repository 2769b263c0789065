// The office converter on its own, with the real LibreOffice: what it accepts, and that its
// limits (time, memory, parallel profiles) hold.
import { chmodSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isFaxgateError } from "../../src/errors.js";
import { findExecutable } from "../../src/fs/executable.js";
import { officeExtension, pdfName } from "../../src/intake/office/office-convert.js";
import { testOffice } from "../helpers/collaborators.js";
import { waitUntil } from "../helpers/wait.js";
import { tempFolder } from "../tmp-dir.js";

const DOCX = readFileSync(path.join(import.meta.dirname, "..", "fixtures", "office", "hello.docx"));
/**
 * A document that keeps LibreOffice busy for seconds (about 5 s here: 50,000 lines to lay out),
 * for the tests of the time limit: the one-page DOCX converts in under a second on a fast
 * machine with a warm profile, which once made those tests fail.
 */
const SLOW_RTF = Buffer.from(
  `{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Times;}}\n${Array.from({ length: 50_000 }, (_, i) => `Line ${i} of a long document\\par`).join("\n")}\n}`,
);
const HAVE_SOFFICE = findExecutable("soffice") !== null;
if (!HAVE_SOFFICE)
  console.warn(
    "office-convert: soffice (LibreOffice) is not installed; the conversion tests skip (apt-get install libreoffice-writer-nogui)",
  );

let dir: string;
beforeEach(() => {
  dir = tempFolder("office-test");
  // the converter may run as a user of its own (a root daemon's): it must reach its folder below
  chmodSync(dir, 0o711);
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Processes whose command line mentions `text` (LibreOffice left running). */
function processesMentioning(text: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      if (cmd.includes(text)) found.push(`${pid} ${cmd}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

describe("which files are office documents", () => {
  it("needs the name (or declared type) and the content to agree", () => {
    expect(officeExtension("Report.DOCX", "application/zip")).toBe(".docx");
    expect(officeExtension("report.docx", "application/pdf")).toBeNull();
    expect(officeExtension("archive.zip", "application/zip")).toBeNull();
    expect(officeExtension("letter", "application/x-ole-storage", "application/msword")).toBe(".doc");
    expect(officeExtension("memo.rtf", "application/rtf")).toBe(".rtf");
    expect(pdfName("report.docx")).toBe("report.pdf");
    expect(pdfName("README")).toBe("README.pdf");
  });

  it("says why it cannot convert when conversion is off or LibreOffice is missing", async () => {
    expect(testOffice({ soffice: false }).unavailableReason("a.xlsx", ".xlsx")).toMatch(
      /a\.xlsx is an Excel workbook \(\.xlsx\).*turned off/,
    );
    const missing = testOffice({ soffice: path.join(dir, "soffice") });
    expect(missing.unavailableReason("a.odt", ".odt")).toMatch(
      /a\.odt is an OpenDocument text .*no converter, LibreOffice, is installed/,
    );
    const err = await missing.convert({ name: "a.odt", ext: ".odt", data: DOCX }).catch((e: unknown) => e);
    expect(isFaxgateError(err, "UNSUPPORTED_TYPE")).toBe(true);
  });
});

describe.skipIf(!HAVE_SOFFICE)("LibreOffice conversion (needs soffice)", () => {
  it("turns a .docx into a PDF, and two at once do not collide (one profile per slot)", async () => {
    const office = testOffice({ concurrency: 2, tmpDir: path.join(dir, "office") });
    try {
      const [a, b] = await Promise.all([
        office.convert({ name: "a.docx", ext: ".docx", data: DOCX }),
        office.convert({
          name: "b.docx",
          ext: ".docx",
          path: path.join(import.meta.dirname, "..", "fixtures", "office", "hello.docx"),
        }),
      ]);
      for (const pdf of [a, b]) expect(pdf.subarray(0, 5).toString()).toBe("%PDF-");
      expect(readdirSync(path.join(dir, "office")).sort()).toEqual(["profile-0", "profile-1"]);
    } finally {
      await office.close();
    }
    expect(processesMentioning(path.join(dir, "office"))).toEqual([]);
  }, 60_000);

  it("past its time limit the conversion is killed, whole, and the document refused", async () => {
    const office = testOffice({ timeoutMs: 1000, tmpDir: path.join(dir, "office") });
    try {
      const err = await office.convert({ name: "slow.rtf", ext: ".rtf", data: SLOW_RTF }).catch((e: unknown) => e);
      expect(isFaxgateError(err, "UNSUPPORTED_TYPE")).toBe(true);
      expect((err as { smtpReply: string }).smtpReply).toMatch(
        /^554 5\.6\.0 slow\.rtf could not be converted to PDF within 1 seconds/,
      );
      expect(processesMentioning(path.join(dir, "office"))).toEqual([]);
    } finally {
      await office.close();
    }
  }, 30_000);

  it('a shutdown during a conversion kills it and answers "try later", never a refusal of the document', async () => {
    const office = testOffice({ tmpDir: path.join(dir, "office") });
    const running = office.convert({ name: "a.docx", ext: ".docx", data: DOCX }).catch((e: unknown) => e);
    // wait until LibreOffice is really running, then shut down
    await waitUntil(() => processesMentioning(path.join(dir, "office")).length > 0, "LibreOffice running", 20_000, 20);
    await office.close();
    const err = await running;
    expect(isFaxgateError(err, "SHUTTING_DOWN")).toBe(true);
    expect((err as { temporary: boolean }).temporary).toBe(true);
    expect(processesMentioning(path.join(dir, "office"))).toEqual([]);
    const after = await office.convert({ name: "b.docx", ext: ".docx", data: DOCX }).catch((e: unknown) => e);
    expect(isFaxgateError(after, "SHUTTING_DOWN")).toBe(true);
  }, 30_000);

  it("runs under the memory limit: too little memory fails the conversion instead of the machine", async () => {
    const office = testOffice({ memoryMb: 64, tmpDir: path.join(dir, "office") });
    try {
      const err = await office.convert({ name: "big.docx", ext: ".docx", data: DOCX }).catch((e: unknown) => e);
      expect((err as { smtpReply: string }).smtpReply).toMatch(
        /^554 5\.6\.0 big\.docx could not be converted to PDF \(/,
      );
    } finally {
      await office.close();
    }
  }, 30_000);

  it("one slot: a second conversion waits for the first; one that cannot get a slot in time is a temporary refusal (451)", async () => {
    // 60 s: on a loaded 2-core machine one conversion took 25-35 s, and the second waits for all of it
    const office = testOffice({ concurrency: 1, timeoutMs: 60_000, tmpDir: path.join(dir, "office") });
    try {
      const [a, b] = await Promise.all([
        office.convert({ name: "a.docx", ext: ".docx", data: DOCX }),
        office.convert({ name: "b.docx", ext: ".docx", data: DOCX }),
      ]);
      expect([a, b].map((p) => p.subarray(0, 5).toString())).toEqual(["%PDF-", "%PDF-"]);
    } finally {
      await office.close();
    }
    const busy = testOffice({ concurrency: 1, timeoutMs: 1000, tmpDir: path.join(dir, "busy") });
    try {
      const hold = busy.convert({ name: "hold.rtf", ext: ".rtf", data: SLOW_RTF }).catch((e: unknown) => e);
      const waited = await busy.convert({ name: "late.docx", ext: ".docx", data: DOCX }).catch((e: unknown) => e);
      expect(isFaxgateError(waited, "CONVERTER_BUSY")).toBe(true);
      expect((waited as { temporary: boolean }).temporary).toBe(true);
      expect((waited as { smtpReply: string }).smtpReply).toMatch(/^451 4\.3\.2 /);
      await hold;
    } finally {
      await busy.close();
    }
  }, 150_000);
});

describe("mail attachments that are office documents", () => {
  it("every documented extension is taken by the attachment policy when its content matches", async () => {
    const { classifyPart } = await import("../../src/intake/mail/attachment-policy.js");
    const { writeFileSync } = await import("node:fs");
    const ole = Buffer.concat([Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), Buffer.alloc(504)]);
    const zip = DOCX;
    const rtf = Buffer.from("{\\rtf1\\ansi Hello}");
    const content: Record<string, Buffer> = {
      ".docx": zip,
      ".odt": zip,
      ".xlsx": zip,
      ".ods": zip,
      ".pptx": zip,
      ".odp": zip,
      ".doc": ole,
      ".xls": ole,
      ".ppt": ole,
      ".rtf": rtf,
    };
    for (const [ext, bytes] of Object.entries(content)) {
      const file = path.join(dir, `doc${ext}`);
      writeFileSync(file, bytes);
      const d = await classifyPart(
        {
          path: file,
          filename: `doc${ext}`,
          contentType: "application/octet-stream",
          bytes: bytes.length,
          inline: false,
        },
        0,
      );
      expect([ext, d.use]).toEqual([ext, true]);
      expect([
        ext,
        officeExtension(
          `doc${ext}`,
          ext === ".rtf" ? "application/rtf" : bytes === ole ? "application/x-ole-storage" : "application/zip",
        ),
      ]).toEqual([ext, ext]);
    }
  });
});
