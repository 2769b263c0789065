// MIME cases from test/fixtures/mail: the streaming parser and the mail-to-job rules on real files.
import { copyFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isFaxgateError } from "../../src/errors.js";
import { parseMail } from "../../src/intake/mail/mail-parse.js";
import { mailToJob, type MailToJobInput } from "../../src/intake/mail/mail-to-job.js";
import { findExecutable } from "../../src/fs/executable.js";
import { testOffice } from "../helpers/collaborators.js";
import type { NewDocument } from "../../src/store/types.js";
import { tempFolder } from "../tmp-dir.js";

const FIXTURES = path.join(import.meta.dirname, "..", "fixtures", "mail");
let dir: string;

beforeEach(() => {
  dir = tempFolder("test");
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
async function load(name: string) {
  const sub = path.join(dir, String(++n));
  mkdirSync(sub);
  const file = path.join(sub, "message.eml");
  copyFileSync(path.join(FIXTURES, name), file);
  return { file, parsed: await parseMail(file, sub) };
}

async function job(name: string, over: Partial<MailToJobInput> = {}) {
  const { file, parsed } = await load(name);
  return mailToJob({
    parsed,
    user: "alice",
    envelopeFrom: "alice@example.com",
    recipients: [{ address: "15551234567@fax.example.com", number: "+15551234567" }],
    coverPreference: false,
    timezone: async () => "America/New_York",
    inlineImageMinBytes: 20_480,
    original: { path: file, sha256: "x" },
    now: Date.parse("2026-11-21T12:00:00Z"),
    ...over,
  });
}

/** A new job's document as text: the bytes it hands the store, or its file. */
const docText = (d: NewDocument): string =>
  d.data ? Buffer.from(d.data).toString("utf8") : readFileSync(d.path, "utf8");
describe("charsets and transfer encodings", () => {
  it("decodes RFC 2047 words (Q and B, two charsets) and a windows-1252 quoted-printable body", async () => {
    const { parsed } = await load("charsets-latin1-qp.eml");
    expect(parsed.subject).toBe("Résumé für die Bürgerin €10");
    expect(parsed.from).toEqual({ name: "Jürgen Müller", address: "alice@example.com" });
    expect(parsed.recipients[0]!.name).toBe("François Désiré");
    expect(parsed.text).toContain("Grüße aus Köln – das kostet 10 €.");
    expect(parsed.text).toContain("damit die Zeile wieder zusammengesetzt");
    const j = await job("charsets-latin1-qp.eml");
    // No attachment but a body: a cover page carries the text.
    expect(j.cover).toMatchObject({
      enabled: true,
      subject: "Résumé für die Bürgerin €10",
      recipientName: "François Désiré",
    });
    // the From header's display name ("Jürgen Müller") is unverified: the cover names the checked user
    expect(j.cover.senderName).toBeUndefined();
    expect(j.cover.notes).toContain("Grüße aus Köln");
    expect(j.documents).toEqual([]);
  });

  it("decodes a KOI8-R base64 body and an ISO-2022-JP subject", async () => {
    const { parsed } = await load("charsets-koi8r-base64.eml");
    expect(parsed.text.trim()).toBe("Привет, это факс.");
    expect(parsed.subject).toBe("日本語");
  });
});

describe("documents", () => {
  it("turns a legacy-charset text attachment into UTF-8 text", async () => {
    const j = await job("text-attachment-latin1.eml");
    expect(j.documents.map((d) => [d.name, d.contentType])).toEqual([["brief.txt", "text/plain"]]);
    expect(docText(j.documents[0]!)).toContain("Frau Müller, anbei die Unterlagen für Köln.");
  });

  it("takes the attachments of a forwarded message, in message order", async () => {
    const j = await job("forwarded.eml");
    // no cover and documents attached: the mail's own text is not a page of its own (smtp.body: auto)
    expect(j.documents.map((d) => d.name)).toEqual(["contract.pdf", "cover-letter.pdf"]);
    const pdfs = j.documents;
    expect(pdfs.every((d) => d.contentType === "application/pdf")).toBe(true);
    for (const d of pdfs) expect(readFileSync(d.path, "latin1")).toMatch(/^%PDF-1\.4/);
    // only the text, listed so that the sender knows
    expect(j.meta?.leftOut?.map((l) => l.name)).toEqual(["the text of the message"]);
  });

  it("leaves out a small inline logo and renders the HTML body to text for the cover", async () => {
    const j = await job("inline-logo.eml", { coverPreference: true });
    expect(j.documents.map((d) => d.name)).toEqual(["report.pdf"]);
    expect(j.meta?.leftOut).toEqual([{ name: "logo.png", reason: expect.stringContaining("inline picture") }]);
    expect(j.cover.enabled).toBe(true);
    expect(j.cover.notes).toMatch(/Hello BOB,|Hello Bob,/);
    expect(j.cover.notes).not.toContain("<");
  });

  it("keeps an inline image as a page when it is large enough to be a document", async () => {
    const j = await job("inline-logo.eml", { inlineImageMinBytes: 10 });
    expect(j.documents.map((d) => d.name)).toEqual(["logo.png", "report.pdf"]);
  });

  it("leaves out signatures, vCards and invitations with reasons", async () => {
    const j = await job("signed.eml", { bodyMode: "ignore" });
    expect(j.documents.map((d) => d.name)).toEqual(["order.pdf"]);
    const reasons = Object.fromEntries((j.meta?.leftOut ?? []).map((l) => [l.name, l.reason]));
    expect(reasons["alice.vcf"]).toMatch(/vCard/);
    expect(reasons["invite.ics"]).toMatch(/calendar/);
    expect(reasons["smime.p7s"]).toMatch(/signature/);
  });

  it("refuses a winmail.dat-only mail as nothing to fax, naming why", async () => {
    const err = await job("winmail.eml").catch((e: unknown) => e);
    expect(isFaxgateError(err, "NOTHING_TO_FAX")).toBe(true);
    expect((err as { smtpReply: string }).smtpReply).toMatch(/^554 5\.6\.0 .*winmail\.dat/);
  });

  it("checks content as well as type: a zip named .pdf and a GIF refuse the mail, naming both", async () => {
    const { file, parsed } = await load("mixed-types.eml");
    parsed.parts = parsed.parts.filter((p) => p.filename !== "letter.docx");
    const err = await job("mixed-types.eml", {
      parsed,
      original: { path: file, sha256: "x" },
      bodyMode: "ignore",
    }).catch((e: unknown) => e);
    expect(isFaxgateError(err, "UNSUPPORTED_TYPE")).toBe(true);
    expect((err as { smtpReply: string }).smtpReply).toMatch(
      /^554 5\.6\.0 Not faxed, .*invoice\.pdf \(it is declared as application\/pdf but its content is a ZIP archive\).*anim\.gif \(GIF images cannot be faxed/,
    );
  });

  it("with intake.partial: send, a text file and an unnamed PDF are taken and the rest is listed as sent without", async () => {
    const { file, parsed } = await load("mixed-types.eml");
    parsed.parts = parsed.parts.filter((p) => p.filename !== "letter.docx");
    const j = await job("mixed-types.eml", {
      parsed,
      original: { path: file, sha256: "x" },
      bodyMode: "ignore",
      partial: "send",
    });
    expect(
      j.meta?.leftOut
        ?.filter((l) => l.sentWithout)
        .map((l) => l.name)
        .sort(),
    ).toEqual(["anim.gif", "invoice.pdf"]);
    expect(j.documents.map((d) => [d.name, d.contentType])).toEqual([
      ["notes.txt", "text/plain"],
      ["scan", "application/pdf"],
    ]);
    const reasons = Object.fromEntries((j.meta?.leftOut ?? []).map((l) => [l.name, l.reason]));
    expect(reasons["invoice.pdf"]).toMatch(/application\/pdf but its content is a ZIP archive/);
    expect(reasons["anim.gif"]).toMatch(/GIF images cannot be faxed/);
  });

  it("refuses the whole mail when an office document cannot be converted, naming it and why", async () => {
    // partial: send, so that the zip and the GIF beside it do not refuse the mail first
    const off = await job("mixed-types.eml", {
      office: testOffice({ soffice: false }),
      partial: "send",
    }).catch((e: unknown) => e);
    expect(isFaxgateError(off, "UNSUPPORTED_TYPE")).toBe(true);
    expect((off as { smtpReply: string }).smtpReply).toMatch(
      /^554 5\.6\.0 letter\.docx is a Word document \(\.docx\).*conversion is turned off/,
    );
    const missing = await job("mixed-types.eml", {
      office: testOffice({ soffice: path.join(dir, "no-such-soffice") }),
      partial: "send",
    }).catch((e: unknown) => e);
    expect((missing as { smtpReply: string }).smtpReply).toMatch(
      /^554 5\.6\.0 letter\.docx is a Word document.*no converter, LibreOffice, is installed/,
    );
  });

  it.skipIf(!findExecutable("soffice"))(
    "refuses a .docx that LibreOffice cannot read (needs soffice)",
    async () => {
      const office = testOffice();
      try {
        const err = await job("mixed-types.eml", { office, partial: "send" }).catch((e: unknown) => e);
        expect((err as { smtpReply: string }).smtpReply).toMatch(
          /^554 5\.6\.0 letter\.docx could not be (converted to PDF|checked for links to outside files)/,
        );
      } finally {
        await office.close();
      }
    },
    60_000,
  );
});

describe("cover page and overrides", () => {
  it("follows the preference, and [nocover]/[cover] in the subject win and are removed", async () => {
    expect((await job("forwarded.eml", { coverPreference: true })).cover.enabled).toBe(true);
    const { file, parsed } = await load("forwarded.eml");
    parsed.subject = "Contract [nocover]";
    const off = await mailToJob({
      parsed,
      user: "alice",
      envelopeFrom: "a@x",
      recipients: [{ address: "x", number: "+15551234567" }],
      coverPreference: true,
      timezone: async () => "UTC",
      inlineImageMinBytes: 0,
      original: { path: file, sha256: "x" },
      now: 0,
    });
    expect(off.cover).toEqual({ enabled: false });
    parsed.subject = "[cover] Contract";
    const on = await mailToJob({
      parsed,
      user: "alice",
      envelopeFrom: "a@x",
      recipients: [{ address: "x", number: "+15551234567" }],
      coverPreference: false,
      timezone: async () => "UTC",
      inlineImageMinBytes: 0,
      original: { path: file, sha256: "x" },
      now: 0,
    });
    expect(on.cover).toMatchObject({ enabled: true, subject: "Contract" });
  });

  it("schedules [at ...] in the account time zone and refuses a time in the past", async () => {
    const { file, parsed } = await load("forwarded.eml");
    parsed.subject = "Contract [at 2026-11-22 14:30]";
    const base = {
      parsed,
      user: "alice",
      envelopeFrom: "a@x",
      recipients: [{ address: "x", number: "+15551234567" }],
      coverPreference: true,
      inlineImageMinBytes: 0,
      original: { path: file, sha256: "x" },
    };
    const j = await mailToJob({
      ...base,
      timezone: async () => "America/New_York",
      now: Date.parse("2026-11-21T12:00:00Z"),
    });
    expect(j.scheduledAt).toBe("2026-11-22T19:30:00.000Z");
    expect(j.cover.subject).toBe("Contract");
    const err = await mailToJob({
      ...base,
      timezone: async () => "America/New_York",
      now: Date.parse("2026-11-23T12:00:00Z"),
    }).catch((e: unknown) => e);
    expect((err as { smtpReply: string }).smtpReply).toMatch(/^554 5\.6\.0 .*in the past/);
  });

  it("cuts subject, notes and names to the documented limits with an ellipsis", async () => {
    const { file, parsed } = await load("charsets-latin1-qp.eml");
    parsed.subject = "S".repeat(80);
    parsed.text = "N".repeat(5000);
    const j = await mailToJob({
      parsed,
      user: "alice",
      senderName: "F".repeat(60),
      envelopeFrom: "a@x",
      recipients: [{ address: "x", number: "+15551234567", contactName: "C".repeat(50) }],
      coverPreference: null,
      timezone: async () => "UTC",
      inlineImageMinBytes: 0,
      original: { path: file, sha256: "x" },
      now: 0,
      bodyMode: "cover",
    });
    expect(Array.from(j.cover.subject!)).toHaveLength(55);
    expect(j.cover.subject!.endsWith("…")).toBe(true);
    expect(Array.from(j.cover.notes!)).toHaveLength(4000);
    expect(Array.from(j.cover.senderName!)).toHaveLength(40);
    expect(Array.from(j.cover.recipientName!)).toHaveLength(40);
  });
});

describe("the text of the mail (smtp.body)", () => {
  const names = (j: { documents: Array<{ name: string }> }) => j.documents.map((d) => d.name);
  const leftOutText = (j: { meta?: { leftOut?: Array<{ name: string; reason: string }> } }) =>
    j.meta?.leftOut?.find((l) => l.name === "the text of the message");

  it("never guesses a cover page preference the service could not tell: the mail waits where it decides", async () => {
    // documents and a text: the preference alone decides the cover, so the sender tries again later
    const err = await job("forwarded.eml", { coverPreference: null }).catch((e: unknown) => e);
    expect(err).toMatchObject({ temporary: true });
    expect((err as { smtpReply: string }).smtpReply).toMatch(/^451 4\.3\.0 Your cover page preference cannot be read/);
    // where the mail itself decides ([nocover] in the subject), the preference is not needed
    const { file, parsed } = await load("forwarded.eml");
    parsed.subject = "Contract [nocover]";
    const decided = await job("forwarded.eml", {
      parsed,
      original: { path: file, sha256: "x" },
      coverPreference: null,
    });
    expect(decided.cover.enabled).toBe(false);
  });

  it("auto: the cover notes when there is a cover; with documents and no cover the text is listed as left out, not a page", async () => {
    const withCover = await job("forwarded.eml", { coverPreference: true });
    expect(withCover.cover.notes).toContain("See the forwarded contract below.");
    expect(names(withCover)).toEqual(["contract.pdf", "cover-letter.pdf"]);
    const noCover = await job("forwarded.eml", { coverPreference: false });
    expect(noCover.cover.enabled).toBe(false);
    expect(names(noCover)).toEqual(["contract.pdf", "cover-letter.pdf"]);
    expect(leftOutText(noCover)?.reason).toMatch(/write \[page\] in the subject/);
    const { file, parsed } = await load("forwarded.eml");
    parsed.subject = "Contract [page]";
    const asked = await job("forwarded.eml", { parsed, original: { path: file, sha256: "x" }, coverPreference: false });
    expect(names(asked)).toEqual(["message.txt", "contract.pdf", "cover-letter.pdf"]);
  });

  it("auto: text longer than the cover notes take goes on a page, whole", async () => {
    const { file, parsed } = await load("forwarded.eml");
    parsed.text = `${"long line of text ".repeat(300)}END`;
    const j = await job("forwarded.eml", { parsed, original: { path: file, sha256: "x" }, coverPreference: true });
    expect(j.cover.enabled).toBe(true);
    expect(j.cover.notes).toBeUndefined();
    expect(docText(j.documents[0]!)).toContain("END");
  });

  it("a text-only mail with [nocover] is faxed as a page of text instead of refused", async () => {
    const { file, parsed } = await load("charsets-latin1-qp.eml");
    parsed.subject = "Note [nocover]";
    const j = await job("charsets-latin1-qp.eml", { parsed, original: { path: file, sha256: "x" } });
    expect(j.cover.enabled).toBe(false);
    expect(names(j)).toEqual(["message.txt"]);
    expect(docText(j.documents[0]!)).toContain("Grüße aus Köln");
  });

  it("page: always a first page, the cover keeps only its subject", async () => {
    const j = await job("forwarded.eml", { coverPreference: true, bodyMode: "page" });
    expect(j.cover).toMatchObject({ enabled: true, subject: "Fwd: Contract" });
    expect(j.cover.notes).toBeUndefined();
    expect(names(j)).toEqual(["message.txt", "contract.pdf", "cover-letter.pdf"]);
  });

  it("cover: the text turns the cover on; with [nocover] it is left out and listed", async () => {
    const on = await job("forwarded.eml", { coverPreference: false, bodyMode: "cover" });
    expect(on.cover).toMatchObject({ enabled: true, notes: "See the forwarded contract below." });
    const { file, parsed } = await load("forwarded.eml");
    parsed.subject = "Contract [nocover]";
    const off = await job("forwarded.eml", { parsed, original: { path: file, sha256: "x" }, bodyMode: "cover" });
    expect(names(off)).toEqual(["contract.pdf", "cover-letter.pdf"]);
    expect(leftOutText(off)?.reason).toMatch(/\[nocover\]/);
  });

  it("ignore: the text is never faxed and is listed as left out; a text-only mail is refused saying so", async () => {
    const j = await job("forwarded.eml", { coverPreference: true, bodyMode: "ignore" });
    expect(j.cover.notes).toBeUndefined();
    expect(names(j)).toEqual(["contract.pdf", "cover-letter.pdf"]);
    expect(leftOutText(j)?.reason).toMatch(/not faxed \(smtp\.body: ignore\)/);
    const err = await job("charsets-latin1-qp.eml", { bodyMode: "ignore" }).catch((e: unknown) => e);
    expect((err as { smtpReply: string }).smtpReply).toBe(
      "554 5.6.0 Nothing to fax: the message has no attachment and the mail text is not faxed (smtp.body: ignore)",
    );
  });
});
