// Office documents dropped into a print folder: converted to PDF like mail attachments, or
// refused into failed/ with the same reason mail gets.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { testOffice } from "../helpers/collaborators.js";
import { drop, spoolHarness, type SpoolHarness } from "./harness.js";
import { waitUntil } from "../helpers/wait.js";

const DOCX = readFileSync(path.join(import.meta.dirname, "..", "fixtures", "office", "hello.docx"));
const HAVE_SOFFICE = findExecutable("soffice") !== null;
if (!HAVE_SOFFICE)
  console.warn(
    "spool office: soffice (LibreOffice) is not installed; the conversion test skips (apt-get install libreoffice-writer-nogui)",
  );

let h: SpoolHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

describe("office documents in the print folder", () => {
  it.skipIf(!HAVE_SOFFICE)(
    "a .docx is converted and queued as a PDF; the original goes to done/",
    async () => {
      h = await spoolHarness();
      await drop(h.folder(), "15551234567 - Report.docx", DOCX);
      const job = await waitUntil(async () => (await h!.jobs())[0], "the job", 60_000);
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
      expect(job.documents.map((d) => [d.name, d.contentType])).toEqual([
        ["15551234567 - Report.pdf", "application/pdf"],
      ]);
      expect((await h!.store.readDocument(job.documents[0]!)).subarray(0, 5).toString()).toBe("%PDF-");
      await waitUntil(
        () => existsSync(path.join(h!.folder(), "done", "15551234567 - Report.docx")),
        "the original in done/",
        8000,
      );
    },
    90_000,
  );

  it.skipIf(!HAVE_SOFFICE)(
    "@@FAX@@ codes written in a .docx are read from the converted PDF",
    async () => {
      h = await spoolHarness();
      await drop(
        h.folder(),
        "invoice.docx",
        readFileSync(path.join(import.meta.dirname, "..", "fixtures", "office", "codes.docx")),
      );
      const job = await waitUntil(async () => (await h!.jobs())[0], "the job", 60_000);
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234599"]);
      expect(job.cover.subject).toBe("Office codes");
      expect(job.documents.map((d) => d.name)).toEqual(["invoice.pdf"]);
    },
    90_000,
  );

  it("without a converter the file is refused into failed/ saying so, and nothing is queued", async () => {
    h = await spoolHarness({ extra: { office: testOffice({ soffice: "/nonexistent/soffice" }) } });
    await drop(h.folder(), "15551234567 - Report.docx", DOCX);
    const reasonFile = path.join(h.folder(), "failed", "15551234567 - Report.docx.reason.txt");
    await waitUntil(() => existsSync(reasonFile), "the reason file", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(
      /Report\.docx is a Word document \(\.docx\).*no converter, LibreOffice, is installed/,
    );
    expect(await h.jobs()).toEqual([]);
  });
});
