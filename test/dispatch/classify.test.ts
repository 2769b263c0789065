import { describe, expect, it } from "vitest";
import { classifyApiError, classifyFaxRecord, retryDelayMs, type RetryContext } from "../../src/dispatch/classify.js";
import { FaxgateError } from "../../src/errors.js";
import { FaxApiError } from "../../src/fax/api-error.js";
import { FAX_RESULTS } from "../../src/fax/result-codes.js";
import { defaultConfig } from "../helpers/collaborators.js";

const queue = defaultConfig().queue;
const created = "2026-03-02T10:00:00.000Z";
const ctx = (over: Partial<RetryContext> = {}): RetryContext => ({
  queue,
  now: Date.parse(created) + 60_000,
  attempts: 1,
  budgetFrom: created,
  random: () => 0.5,
  ...over,
});

describe("classifyApiError", () => {
  it("never retries a send whose outcome is unknown, even if temporary", () => {
    const err = new FaxApiError("API_OUTCOME_UNKNOWN", "socket closed after the request was sent", {
      temporary: true,
      outcomeUnknown: true,
    });
    expect(classifyApiError(err, true, ctx()).action).toBe("unknown");
  });

  it("defers temporary errors on the schedule, last step repeating", () => {
    const err = new FaxApiError("API_SERVER", "HTTP 503", { temporary: true, status: 503 });
    const d1 = classifyApiError(err, true, ctx({ attempts: 1 }));
    expect(d1).toMatchObject({ action: "defer" });
    if (d1.action === "defer") expect(d1.nextAttemptAt.getTime() - ctx().now).toBe(30_000);
    const d9 = classifyApiError(err, true, ctx({ attempts: 9 }));
    if (d9.action === "defer") expect(d9.nextAttemptAt.getTime() - ctx().now).toBe(3_600_000);
  });

  it("jitters within +-20%", () => {
    expect(retryDelayMs([10_000], 1, () => 0)).toBe(8000);
    expect(retryDelayMs([10_000], 1, () => 0.999999)).toBe(12000);
  });

  it("waits as long as a 429 asks, flagged so it does not count as a try", () => {
    const err = new FaxApiError("API_RATE_LIMITED", "HTTP 429", { temporary: true, status: 429, retryAfterMs: 7000 });
    const d = classifyApiError(err, true, ctx());
    expect(d).toMatchObject({ action: "defer", rateLimited: true });
    if (d.action === "defer") expect(d.nextAttemptAt.getTime() - ctx().now).toBe(7000);
  });

  it("fails permanent errors at once with the service words", () => {
    const err = new FaxApiError("API_REJECTED", "HTTP 400", {
      temporary: false,
      status: 400,
      serviceName: "InvalidInputError",
      serviceMessage: "faxNumber is invalid",
    });
    expect(classifyApiError(err, true, ctx())).toEqual({
      action: "fail",
      reason: "InvalidInputError: faxNumber is invalid",
    });
  });

  it("expires a temporary failure past the maximum age", () => {
    const err = new FaxgateError("API_NETWORK", "connection refused", { temporary: true });
    const d = classifyApiError(err, false, ctx({ now: Date.parse(created) + 49 * 3_600_000 }));
    expect(d).toMatchObject({ action: "fail", expired: true });
    if (d.action === "fail") expect(d.reason).toMatch(/^expired/);
  });

  it("unexpected errors: unknown when the request may have left, else deferred", () => {
    expect(classifyApiError(new TypeError("boom"), true, ctx()).action).toBe("unknown");
    expect(classifyApiError(new TypeError("boom"), false, ctx()).action).toBe("defer");
  });
});

describe("classifyFaxRecord", () => {
  const rec = (
    status: string,
    r: { resultCode: string; errorCode: string | null; errorInfo: string | null; resultInfo: string },
  ) => ({
    messageId: "m",
    status,
    resultCode: r.resultCode,
    resultInfo: r.resultInfo,
    errorCode: r.errorCode,
    errorInfo: r.errorInfo,
  });

  it("success and pending", () => {
    expect(classifyFaxRecord(rec("success", FAX_RESULTS.ok), 0, ctx()).action).toBe("delivered");
    expect(classifyFaxRecord({ messageId: "m", status: "processing" }, 0, ctx()).action).toBe("pending");
  });

  it("busy is tried again up to maxFaxTries, then fails with the reason", () => {
    const busy = rec("failed", FAX_RESULTS.busy);
    expect(classifyFaxRecord(busy, 0, ctx())).toMatchObject({ action: "defer", faxTry: true });
    expect(classifyFaxRecord(busy, 1, ctx())).toMatchObject({ action: "defer", faxTry: true });
    expect(classifyFaxRecord(busy, 2, ctx())).toEqual({ action: "fail", reason: "busy (3 tries)" });
  });

  it("a voice line fails at once", () => {
    expect(classifyFaxRecord(rec("failed", FAX_RESULTS.noFaxTone), 0, ctx())).toEqual({
      action: "fail",
      reason: FAX_RESULTS.noFaxTone.words,
    });
  });
});
