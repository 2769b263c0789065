// The one formatter of each kind of value (src/format.ts), and the mail wording built on it: a
// refusal cut at a word with one ellipsis, one sentence end, and no request to correct a repeat.
import { describe, expect, it } from "vitest";
import { duration, faxNumber, localTime, localTimesIn, pages, size } from "../src/format.js";
import { clip } from "../src/notify/composed-mail.js";
import { composeInbound } from "../src/notify/inbound-mail.js";
import { composeOutcome } from "../src/notify/outcome-mail.js";
import { job } from "./notify/factories.js";
import { composeRejected } from "../src/notify/rejected-mail.js";
import { renderText } from "../src/notify/mail-body.js";

describe("src/format.ts", () => {
  it("writes a fax number one way, however it came", () => {
    for (const n of ["+15550100999", "+1 (555) 010-0999", "15550100999"]) expect(faxNumber(n)).toBe("+1 555-010-0999");
    // a caller id without its country code, read with the default one (the report's old "5550100999")
    expect(faxNumber("5550100999", "1")).toBe("+1 555-010-0999");
    expect(faxNumber("+442079460000")).toBe("+44 20 7946 0000");
    expect(faxNumber("anonymous")).toBe("anonymous");
    expect(faxNumber(null)).toBeNull();
  });

  it("counts pages with the right plural, and sizes and durations as people read them", () => {
    expect(pages(1)).toBe("1 page");
    expect(pages(2)).toBe("2 pages");
    expect(pages(null)).toBeNull();
    expect(size(1536)).toBe("2 KB");
    expect(size(1_572_864)).toBe("1.5 MB");
    expect(duration(65)).toBe("1 min 5 s");
  });

  it("writes times in a zone, also inside a sentence", () => {
    expect(localTime("2026-11-28T16:00:00Z", "America/New_York")).toBe("Nov 28, 2026, 11:00:00 AM EST");
    expect(localTimesIn("next try at 2026-11-28T16:00:00.000Z", "UTC")).toBe(
      "next try at Nov 28, 2026, 4:00:00 PM UTC",
    );
  });

  it("the inbound mail writes numbers and pages as the console and CLI do", () => {
    const mail = composeInbound(
      {
        messageId: "m1",
        status: "success",
        from: "+15557654321",
        dialled: "+15550100201",
        csid: "DR SMITH",
        pages: 1,
        duration: null,
        createdAt: null,
        resultCode: null,
        resultInfo: null,
        errorCode: null,
        errorInfo: null,
      },
      "UTC",
    );
    expect(mail.subject).toBe("Fax received from +1 555-765-4321, 1 page");
    const text = renderText(mail.blocks);
    expect(text).toContain(faxNumber("+15550100201")!);
    expect(text).toMatch(/Pages:?\s+1 page\b/);
  });
});

describe("refusal wording", () => {
  const repeat =
    "not faxed again: the same document to the same destination (+15551234567) was queued as fax job FG1 less than 60 minutes ago. To send it again on purpose, wait 60 minutes or change its subject.";

  it("cuts a long subject at a word with one ellipsis", () => {
    const s = clip(`Fax not sent: "invoice.pdf": ${repeat}`, 120);
    expect(s.length).toBeLessThanOrEqual(120);
    expect(s).toMatch(/ [a-z]+…$/);
    expect(s).not.toContain("...");
  });

  it("a repeat: one sentence end, and nothing to correct", () => {
    const mail = composeRejected(
      { file: "invoice.pdf", reason: repeat, source: "spool", nothingToCorrect: true },
      "2026-11-28T16:00:00Z",
      "UTC",
    );
    const text = renderText(mail.blocks);
    expect(text).not.toContain("..");
    expect(text).not.toMatch(/correct it/);
    expect(text).toContain("change its subject. Nothing was faxed this time, and there is nothing to correct.");
  });

  it("a sender not proved is not asked to correct what someone else may have written", () => {
    const mail = composeRejected(
      { subject: "Lab results", reason: "the From: address is not proven", source: "imap", senderUnproved: true },
      "2026-11-28T16:00:00Z",
      "UTC",
    );
    const text = renderText(mail.blocks);
    expect(text).not.toMatch(/correct it/);
    expect(text).toContain("is not proven. Nothing was faxed. If you did not send it, someone else wrote in your name");
  });

  it("a file with something wrong still asks for the correction", () => {
    const mail = composeRejected(
      { file: "x.pdf", reason: "no fax number in it.", source: "spool" },
      "2026-11-28T16:00:00Z",
      "UTC",
    );
    expect(renderText(mail.blocks)).toContain(
      "no fax number in it. Nothing was faxed; please correct it and send it again.",
    );
  });
});

describe("the outcome mail", () => {
  const busy = { state: "failed" as const, resultCode: "6100", resultInfo: "Fax Number Busy", pages: 1, duration: 40 };

  it("a failure gives the next step; one page is '1 page'; the duration is per page", () => {
    const text = renderText(composeOutcome(job({ state: "failed" }, [busy]), "UTC").blocks);
    expect(text).toContain("What you can do: check the number with the recipient, then send it again");
    expect(text).toMatch(/Pages:?\s+1 page\b/);
    expect(text).toMatch(/Time per page:?\s+40 s/);
    expect(text).not.toMatch(/\bDuration\b/);
  });

  it("a cancelled fax says who cancelled it", () => {
    const cancelled = job({ state: "cancelled" }, [{ state: "cancelled" }]);
    const text = renderText(composeOutcome(cancelled, "UTC", { cancelledBy: "ops, an operator" }).blocks);
    expect(text).toContain("was cancelled by ops, an operator and not sent.");
  });
});
