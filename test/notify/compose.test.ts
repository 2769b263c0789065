import { describe, expect, it } from "vitest";
import { escapeHtml, renderHtml, renderText } from "../../src/notify/mail-body.js";
import { composeInbound } from "../../src/notify/inbound-mail.js";
import { composeKeyExpiry } from "../../src/notify/key-expiry-mail.js";
import { notificationMessageId } from "../../src/notify/message-id.js";
import { composeOutcome, outcomeSubject } from "../../src/notify/outcome-mail.js";
import { composeRejected } from "../../src/notify/rejected-mail.js";
import { formatDuration, formatTime } from "../../src/notify/time-format.js";
import { nextNotifyAttempt } from "../../src/notify/retry-schedule.js";
import { job } from "./factories.js";

const busy = {
  state: "failed" as const,
  number: "+15551230000",
  resultCode: "17",
  resultInfo: "Line busy",
  errorCode: "BUSY",
  errorInfo: "The remote line was busy",
  pages: null,
  duration: 0,
};

describe("outcome subject says the outcome at a glance", () => {
  it("one recipient delivered, with pages", () => {
    expect(outcomeSubject(job())).toBe("Fax to +1 555-123-4567 delivered, 3 pages");
    expect(outcomeSubject(job({}, [{ pages: 1 }]))).toBe("Fax to +1 555-123-4567 delivered, 1 page");
  });
  it("one recipient failed, in plain words", () => {
    expect(outcomeSubject(job({ state: "failed" }, [busy]))).toBe("Fax to +1 555-123-0000 failed: busy");
    expect(outcomeSubject(job({ state: "failed" }, [{ ...busy, resultCode: "18", errorCode: "NO_ANSWER" }]))).toBe(
      "Fax to +1 555-123-0000 failed: no answer",
    );
  });
  it("several recipients are counted", () => {
    const j = job({ state: "partial" }, [{}, { number: "+15551239999" }, busy]);
    expect(outcomeSubject(j)).toBe("Fax to 3 recipients: 2 delivered, 1 failed");
    const cancelled = job({ state: "cancelled" }, [{ state: "cancelled" }, { state: "cancelled" }]);
    expect(outcomeSubject(cancelled)).toBe("Fax to 2 recipients: 2 cancelled");
  });
  it("an unknown service failure is reported with the service text", () => {
    const j = job({ state: "failed" }, [
      {
        state: "failed",
        resultCode: "6931",
        resultInfo: "Remote DCN",
        errorCode: "X",
        errorInfo: "Unexpected DCN From Remote",
      },
    ]);
    // quoted as the service said it: a code no rule knows is not put into our own words
    expect(outcomeSubject(j)).toBe("Fax to +1 555-123-4567 failed: Unexpected DCN From Remote");
  });
});

describe("outcome body", () => {
  it("lists every recipient with result, pages, duration, attempts, ids and times in the account zone", () => {
    const j = job(
      { state: "partial", meta: { leftOut: [{ name: "logo.png", reason: "an inline image under 20 KB" }] } },
      [{ faxAttempt: 2 }, busy],
    );
    const m = composeOutcome(j, "America/New_York");
    const text = renderText(m.blocks);
    expect(m.failure).toBe(true);
    expect(m.mandatory).toBe(false);
    expect(text).toContain("Job");
    expect(text).toContain("J1");
    expect(text).toContain("m-1");
    expect(text).toContain("1 min 5 s");
    expect(text).toMatch(/Attempts:\s+2/);
    expect(text).toContain("busy");
    // 22:01 UTC is 5:01 PM in New York in November
    expect(text).toContain("5:01:00 PM EST");
    expect(text).toContain("logo.png: an inline image under 20 KB");
  });

  it("escapes everything that goes into the HTML part", () => {
    const j = job({ cover: { enabled: true, subject: '<script>alert("x")</script> & co' } }, [
      { name: "Bob <b>&</b>" },
    ]);
    const m = composeOutcome(j, "UTC");
    const html = renderHtml(m.subject, m.blocks);
    expect(html).not.toContain("<script>");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co");
    expect(html).toContain("Bob &lt;b&gt;&amp;&lt;/b&gt;");
    expect(escapeHtml(`'"<>&`)).toBe("&#39;&quot;&lt;&gt;&amp;");
  });

  it("an expired or corrupt job is mandatory news", () => {
    // as the dispatcher words it; the busy codes of the last try must not hide the expiry
    const expired = job({ state: "failed" }, [
      { ...busy, number: "+15551234567", lastError: "expired: not delivered within 48 hours (last error: busy)" },
    ]);
    expect(composeOutcome(expired, "UTC").mandatory).toBe(true);
    expect(outcomeSubject(expired)).toBe(
      "Fax to +1 555-123-4567 failed: not delivered within 48 hours (last error: busy)",
    );
    expect(composeOutcome(job({ state: "failed" }, [busy]), "UTC").mandatory).toBe(false);
    const corrupt = job({ state: "corrupt", corruptReason: "not a PDF", meta: { origin: { file: "scan.pdf" } } }, []);
    const m = composeOutcome(corrupt, "UTC");
    expect(m.mandatory).toBe(true);
    expect(m.subject).toBe('Fax not sent: "scan.pdf" could not be processed');
    expect(renderText(m.blocks)).toContain("not a PDF");
  });
});

describe("other mails", () => {
  it("rejected input names the file and the reason", () => {
    const m = composeRejected(
      { file: "report.pdf", reason: "no fax number was found" },
      "2026-11-21T22:00:00.000Z",
      "UTC",
    );
    expect(m.subject).toBe('Fax not sent: "report.pdf": no fax number was found');
    expect(m.mandatory).toBe(true);
    expect(renderText(m.blocks)).toContain("Nov 21, 2026");
    const spool = composeRejected(
      { file: "scan.pdf", reason: "NO_DESTINATION: no fax number was found", source: "spool" },
      "2026-11-21T22:00:00.000Z",
      "UTC",
    );
    expect(spool.subject).toBe('Fax not sent: "scan.pdf": no fax number was found');
    expect(renderText(spool.blocks)).toContain("scan.pdf.reason.txt");
  });
  it("key expiry gives the date in the account zone", () => {
    const m = composeKeyExpiry({ keyName: "gateway", expiresAt: "2026-11-28T12:00:00.000Z" }, "Europe/Berlin");
    expect(m.subject).toBe('Fax gateway: API key "gateway" expires on Nov 28, 2026, 1:00:00 PM GMT+1');
    // it goes to the end user, who cannot run admin commands: no command to run, who acts instead
    expect(renderText(m.blocks)).not.toMatch(/faxgate |keys rotate/);
    expect(renderText(m.blocks)).toMatch(/nothing for you to do/);
  });
  it("inbound fax: sender number, CSID, pages", () => {
    const p = {
      messageId: "in-1",
      status: "success",
      from: "+15557654321",
      csid: "ACME SALES",
      pages: 2,
      duration: 30,
      createdAt: "2026-11-21T22:00:00.000Z",
      resultCode: "0",
      resultInfo: "OK",
      errorCode: null,
      errorInfo: null,
    };
    const m = composeInbound(p, "UTC");
    expect(m.subject).toBe("Fax received from +1 555-765-4321, 2 pages");
    expect(renderText(m.blocks)).toContain("ACME SALES");
    const failed = composeInbound({ ...p, status: "failed", resultCode: "50", errorCode: "TRANSMISSION_ERROR" }, "UTC");
    expect(failed.subject).toBe("Fax reception from +1 555-765-4321 failed: the call dropped during the transmission");
    expect(failed.failure).toBe(true);
  });
});

describe("helpers", () => {
  it("formats times and durations", () => {
    expect(formatTime("2026-07-01T12:00:00.000Z", "America/Los_Angeles")).toBe("Jul 1, 2026, 5:00:00 AM PDT");
    expect(formatTime("2026-07-01T12:00:00.000Z", "Not/AZone")).toBe("Jul 1, 2026, 12:00:00 PM UTC");
    expect(formatTime(null, "UTC")).toBeNull();
    expect(formatDuration(3)).toBe("3 s");
    expect(formatDuration(120)).toBe("2 min");
  });
  it("Message-ID is stable per notification and differs between notifications", () => {
    const n = { id: 7, dedupeKey: "outcome:J1", createdAt: "2026-11-21T22:00:00.123Z" };
    const a = notificationMessageId(n, "faxgate@example.com");
    expect(a).toBe(notificationMessageId({ ...n }, "faxgate@example.com"));
    expect(a).toMatch(/^<20261121T220000Z\.n7\.[0-9a-f]{12}\.faxgate@example\.com>$/);
    expect(notificationMessageId({ ...n, id: 8 }, "faxgate@example.com")).not.toBe(a);
  });
  it("retry schedule: quick, then hourly, then gives up after two days", () => {
    const t0 = Date.parse("2026-11-21T00:00:00Z");
    const first = nextNotifyAttempt(1, t0, t0)!.getTime() - t0;
    expect(first).toBeGreaterThanOrEqual(30_000);
    expect(first).toBeLessThan(33_001);
    const late = nextNotifyAttempt(9, t0, t0 + 3_600_000)!.getTime() - (t0 + 3_600_000);
    expect(late).toBeGreaterThanOrEqual(3_600_000);
    expect(nextNotifyAttempt(50, t0, t0 + 47.5 * 3_600_000)).toBeNull();
  });
});
