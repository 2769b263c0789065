// The one classifier: what the dispatcher may retry, and when it must reconcile first.
import { describe, expect, it } from "vitest";
import { classifyStatus, classifyTransportError, parseRetryAfter } from "../../src/fax/failure-rules.js";

const err = (code: string) => Object.assign(new Error(code), { code });

describe("status classes", () => {
  it.each([
    [400, "API_INVALID_INPUT", false],
    [401, "API_AUTH", false],
    [403, "API_FORBIDDEN", false],
    [404, "API_NOT_FOUND", false],
    [409, "API_REJECTED", false],
    [413, "API_TOO_LARGE", false],
    [422, "API_REJECTED", false],
    [429, "API_RATE_LIMITED", true],
    [500, "API_SERVER", true],
    [503, "API_SERVER", true],
    [504, "API_SERVER", true],
  ] as const)("%i -> %s (temporary %s)", (status, code, temporary) => {
    expect(classifyStatus(status)).toMatchObject({ code, temporary });
  });
});

describe("transport failures", () => {
  it.each([
    "ECONNREFUSED",
    "ENOTFOUND",
    "UND_ERR_CONNECT_TIMEOUT",
    "DEPTH_ZERO_SELF_SIGNED_CERT",
    "ERR_TLS_CERT_ALTNAME_INVALID",
  ])("%s happens before sending: API_NETWORK, never unknown, even for a send", (code) => {
    expect(classifyTransportError(err(code), true)).toMatchObject({
      code: "API_NETWORK",
      temporary: true,
      outcomeUnknown: false,
    });
  });
  it.each([
    "UND_ERR_SOCKET",
    "ECONNRESET",
    "EPIPE",
    "UND_ERR_HEADERS_TIMEOUT",
    "UND_ERR_BODY_TIMEOUT",
    "SOMETHING_NEW",
  ])("%s after connecting leaves a send unknown", (code) => {
    expect(classifyTransportError(err(code), true)).toMatchObject({
      code: "API_OUTCOME_UNKNOWN",
      temporary: true,
      outcomeUnknown: true,
    });
  });
  it("the same failures on a read are plain temporary", () => {
    expect(classifyTransportError(err("UND_ERR_SOCKET"), false)).toMatchObject({
      code: "API_NETWORK",
      temporary: true,
      outcomeUnknown: false,
    });
    expect(classifyTransportError(err("UND_ERR_HEADERS_TIMEOUT"), false)).toMatchObject({
      code: "API_TIMEOUT",
      temporary: true,
      outcomeUnknown: false,
    });
  });
  it("finds the code inside an AggregateError (happy eyeballs) and a cause", () => {
    const agg = new AggregateError([err("ECONNREFUSED"), err("ECONNREFUSED")], "all failed");
    expect(classifyTransportError(agg, true).code).toBe("API_NETWORK");
    expect(classifyTransportError(new Error("wrapped", { cause: err("ECONNRESET") }), true).outcomeUnknown).toBe(true);
  });
});

describe("Retry-After", () => {
  const now = Date.parse("2026-11-21T12:00:00.000Z");
  it("delta seconds", () => expect(parseRetryAfter("7", now)).toBe(7000));
  it("HTTP-date", () => expect(parseRetryAfter("Sat, 21 Nov 2026 12:00:30 GMT", now)).toBe(30_000));
  it("a date in the past means now", () => expect(parseRetryAfter("Sat, 21 Nov 2026 11:00:00 GMT", now)).toBe(0));
  it("garbage and absence are undefined", () => {
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
