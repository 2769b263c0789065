import { describe, expect, it } from "vitest";
import { lstatSync, rmSync, symlinkSync, writeFileSync, linkSync } from "node:fs";
import path from "node:path";
import { decideAddressing } from "../../src/intake/print/addressing.js";
import { ambiguity, parseEmbeddedCodes, textPages } from "../../src/intake/print/embedded-codes.js";
import { parseFileName } from "../../src/intake/print/file-name-address.js";
import { pdfPageTexts } from "../../src/intake/pdf/pdf-text.js";
import { isIgnoredName, judgeStat } from "../../src/spool/safe-file.js";
import { parseTicket } from "../../src/intake/print/ticket.js";
import { isFaxgateError } from "../../src/errors.js";
import { textPdf } from "./harness.js";
import { testPolicy } from "../helpers/collaborators.js";
import { tempFolder } from "../tmp-dir.js";

const noApi = () => {
  throw new Error("no contacts in this test");
};

describe("file names", () => {
  it('reads numbers and the subject after " - "', () => {
    expect(parseFileName("15551234567.pdf")).toEqual({ numbers: ["15551234567"], subject: undefined });
    expect(parseFileName("15551234567,15557654321 - Invoice 42.pdf")).toEqual({
      numbers: ["15551234567", "15557654321"],
      subject: "Invoice 42",
    });
    expect(parseFileName("+1 (555) 123-4567 - Re - offer.pdf")).toEqual({
      numbers: ["+1 (555) 123-4567"],
      subject: "Re - offer",
    });
  });
  it("finds no numbers in ordinary names", () => {
    expect(parseFileName("Invoice 42.pdf").numbers).toEqual([]);
    expect(parseFileName("2024 report.pdf").numbers).toEqual([]);
    expect(parseFileName("scan0001.pdf").numbers).toEqual([]);
  });
});

describe("embedded codes", () => {
  it("reads every code, repeated @@FAX@@ is send-to-many", () => {
    const c = parseEmbeddedCodes([
      "Hello @@FAX 555-123-4567@@ and @@FAX +1 555 765 4321@@\n@@SUBJECT Invoice 42 @@ @@COVER on@@ @@TO Acme Billing@@",
    ]);
    expect(c.fax).toEqual(["555-123-4567", "+1 555 765 4321"]);
    expect(c.subject).toBe("Invoice 42");
    expect(c.cover).toBe(true);
    expect(c.to).toBe("Acme Billing");
    expect(ambiguity(c)).toBeNull();
  });
  it("refuses different numbers on different pages unless @@ALL@@", () => {
    const pages = ["@@FAX 5551234567@@ first letter", "second letter @@FAX 5557654321@@"];
    expect(ambiguity(parseEmbeddedCodes(pages))).toMatch(/different pages.*@@ALL@@/);
    expect(ambiguity(parseEmbeddedCodes([...pages, "@@ALL@@"]))).toBeNull();
    // The same number repeated on every page (a letterhead) is one destination.
    expect(ambiguity(parseEmbeddedCodes(["@@FAX 5551234567@@", "@@FAX 5551234567@@"]))).toBeNull();
  });
  it("splits plain text into pages at form feeds", () => {
    expect(textPages("a\fb\fc")).toEqual(["a", "b", "c"]);
  });
  it("finds codes in the text of a generated PDF, page by page", async () => {
    const pdf = await textPdf([["Dear customer", "@@FAX +1 555 123 4567@@"], ["@@SUBJECT Second page@@"]]);
    const pages = await pdfPageTexts(pdf);
    expect(pages).toHaveLength(2);
    const c = parseEmbeddedCodes(pages);
    expect(c.fax).toEqual(["+1 555 123 4567"]);
    expect(c.faxPages).toEqual([1]);
    expect(c.subject).toBe("Second page");
  });
  it("rejects a broken PDF with an error, not a hang", async () => {
    await expect(pdfPageTexts(Buffer.from("%PDF-1.4\nnot really a pdf"))).rejects.toThrow();
  });
});

describe("tickets", () => {
  it("accepts the documented fields and ignores unknown (path-like) keys", () => {
    const r = parseTicket(
      JSON.stringify({
        to: ["+15551234567", "5557654321"],
        subject: "Q3",
        cover: "on",
        notes: "Please call",
        tags: ["acct"],
        scheduledDate: "2026-12-01T09:00:00Z",
        file: "../../etc/passwd",
      }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.ticket.to).toEqual(["+15551234567", "5557654321"]);
    expect(r.ticket.cover).toBe(true);
    expect(r.ignoredKeys).toEqual(["file"]);
  });
  it('takes a comma-separated "to" string (as the CUPS backend writes it)', () => {
    const r = parseTicket('{"to":"+15551234567, +15557654321"}');
    expect(r.ok && r.ticket.to).toEqual(["+15551234567", "+15557654321"]);
  });
  it("refuses bad JSON and bad types with a reason naming the field", () => {
    expect(parseTicket("{not json")).toMatchObject({ ok: false, reason: expect.stringMatching(/not valid JSON/) });
    expect(parseTicket("[1,2]")).toMatchObject({ ok: false });
    expect(parseTicket('{"to": 5551234567}')).toMatchObject({ ok: false, reason: expect.stringMatching(/"to"/) });
    expect(parseTicket('{"scheduledDate": "tomorrow"}')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/scheduledDate/),
    });
    expect(parseTicket('{"tags": ["../x"]}')).toMatchObject({ ok: false, reason: expect.stringMatching(/tags/) });
  });
});

describe("addressing: what the user typed wins, conflicting codes refuse", () => {
  const base = { defaultCountryCode: "1", api: noApi, user: "alice", destinations: testPolicy() };
  it("the destination policy is the user's own first: alice's allow and bob's deny hold for print too", async () => {
    const users = [
      { name: "alice", destinations: { rules: [{ action: "allow" as const, prefix: "+1900555" }] } },
      { name: "bob", destinations: { rules: [{ action: "deny" as const, prefix: "+1555222" }] } },
    ];
    const destinations = testPolicy(() => users);
    const allowed = await decideAddressing({ ...base, destinations, fileName: "19005550142 - Menu.pdf" });
    expect(allowed.recipients).toEqual([{ number: "+19005550142" }]);
    const premium = await decideAddressing({
      ...base,
      destinations,
      user: "bob",
      fileName: "19005550142 - Menu.pdf",
    }).catch((e) => e);
    expect(isFaxgateError(premium, "DESTINATION_REFUSED")).toBe(true);
    const denied = await decideAddressing({
      ...base,
      destinations,
      user: "bob",
      fileName: "15552220000 - x.pdf",
    }).catch((e) => e);
    expect(isFaxgateError(denied, "DESTINATION_REFUSED")).toBe(true);
    expect((denied as Error).message).toMatch(/users\[bob\]\.destinations\.rules\[0\]/);
  });
  it("a ticket beats the file name; codes that name another number refuse the file", async () => {
    const t = parseTicket('{"to":["5551110000"],"subject":"From ticket"}');
    if (!t.ok) throw new Error(t.reason);
    const a = await decideAddressing({
      ...base,
      fileName: "15552220000 - From name.pdf",
      ticket: t.ticket,
      codes: parseEmbeddedCodes(["no codes"]),
    });
    expect(a.via).toBe("ticket");
    expect(a.recipients).toEqual([{ number: "+15551110000" }]);
    expect(a.subject).toBe("From ticket");
    const conflict = await decideAddressing({
      ...base,
      fileName: "x.pdf",
      ticket: t.ticket,
      codes: parseEmbeddedCodes(["@@FAX 5553330000@@"]),
    }).catch((e) => e);
    expect(isFaxgateError(conflict, "AMBIGUOUS_DESTINATION")).toBe(true);
    expect((conflict as Error).message).toMatch(/5553330000.*\+15551110000/);
  });
  it("the file name beats codes: agreeing codes fill in, conflicting ones refuse", async () => {
    const a = await decideAddressing({
      ...base,
      fileName: "15552220000 - From name.pdf",
      codes: parseEmbeddedCodes(["@@FAX 555-222-0000@@ @@COVER on@@"]),
    });
    expect(a.via).toBe("file name");
    expect(a.recipients).toEqual([{ number: "+15552220000" }]);
    expect(a.cover).toMatchObject({ enabled: true, subject: "From name" });
    const conflict = await decideAddressing({
      ...base,
      fileName: "15552220000 - From name.pdf",
      codes: parseEmbeddedCodes(["@@FAX 5553330000@@"]),
    }).catch((e) => e);
    expect(isFaxgateError(conflict, "AMBIGUOUS_DESTINATION")).toBe(true);
  });
  it("codes address a document whose name only looks like a number", async () => {
    const a = await decideAddressing({
      ...base,
      fileName: "20240101.pdf",
      codes: parseEmbeddedCodes(["@@FAX 5553330000@@"]),
    });
    expect(a.via).toBe("codes");
    expect(a.recipients).toEqual([{ number: "+15553330000" }]);
  });
  it("refuses a bad number and a missing destination with clear codes", async () => {
    const bad = await decideAddressing({
      ...base,
      fileName: "12.pdf",
      codes: parseEmbeddedCodes(["@@FAX 12@@"]),
    }).catch((e) => e);
    expect(isFaxgateError(bad, "BAD_NUMBER")).toBe(true);
    const none = await decideAddressing({ ...base, fileName: "letter.pdf" }).catch((e) => e);
    expect(isFaxgateError(none, "NO_DESTINATION")).toBe(true);
    expect((none as Error).message).toMatch(/letter\.pdf\.json/);
  });
});

describe("what is never opened", () => {
  it("ignores dot-files and partial downloads", () => {
    for (const n of [".hidden.pdf", "a.pdf.part", "a.pdf.tmp", "a.pdf.crdownload", "~$report.docx", "a.pdf~"])
      expect(isIgnoredName(n)).toBe(true);
    expect(isIgnoredName("15551234567 - Invoice.pdf")).toBe(false);
  });
  it("judges links by lstat", () => {
    const dir = tempFolder("test");
    try {
      writeFileSync(path.join(dir, "outside"), "secret");
      symlinkSync("/etc/passwd", path.join(dir, "link.pdf"));
      linkSync(path.join(dir, "outside"), path.join(dir, "hard.pdf"));
      expect(judgeStat(lstatSync(path.join(dir, "link.pdf")), 1e6)).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/symbolic link/),
      });
      expect(judgeStat(lstatSync(path.join(dir, "hard.pdf")), 1e6)).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/hard links/),
      });
      writeFileSync(path.join(dir, "big.pdf"), "four");
      expect(judgeStat(lstatSync(path.join(dir, "big.pdf")), 3)).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/over the limit/),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
