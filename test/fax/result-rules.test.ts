// The one vocabulary of fax results: code before words, operator rules first, unknown results
// told in the service's own words, and matching that stays linear on hostile text.
import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { explainFailure, operatorRules, serviceWords } from "../../src/fax/result-rules.js";

describe("explainFailure", () => {
  it("reads the real service family and its words", () => {
    expect(explainFailure({ resultCode: "6100", resultInfo: "Fax Number Busy" })).toMatchObject({
      rule: "busy",
      action: "retry",
      words: "busy",
    });
    expect(explainFailure({ resultCode: "6000", resultInfo: "Fax Connect Failed" })).toMatchObject({
      rule: "connect failed",
      action: "retry",
    });
    expect(explainFailure({ resultCode: "5100", resultInfo: "Fax Request Blocked" })).toMatchObject({
      rule: "blocked",
      action: "fail",
    });
    expect(explainFailure({ resultCode: "5200", resultInfo: "Fax Rendering Issue" })).toMatchObject({
      rule: "rendering",
      action: "fail",
    });
    // codes we have never seen, words we know
    expect(explainFailure({ resultCode: "6911", resultInfo: "Remote party did not answer" })).toMatchObject({
      rule: "no answer",
      action: "retry",
    });
    expect(explainFailure({ resultCode: "6912", errorInfo: "No fax tone detected" })).toMatchObject({
      rule: "no fax tone",
      action: "fail",
    });
  });

  it("a code decides before words that mention something else", () => {
    expect(explainFailure({ resultCode: "18", resultInfo: "Line busy" }).rule).toBe("no answer");
  });

  it("an unknown result is retried and quoted as the service said it", () => {
    const m = explainFailure({
      resultCode: "7734",
      resultInfo: "Carrier Route Withdrawn",
      errorCode: "7734",
      errorInfo: "Carrier Route Withdrawn",
    });
    expect(m).toEqual({
      rule: null,
      action: "retry",
      words: 'the fax service reported "Carrier Route Withdrawn" (code 7734)',
    });
    expect(serviceWords({ resultCode: null, resultInfo: null })).toBe("no reason given");
  });

  it("operator rules come first; a phrase is literal, and code plus phrase must both match", () => {
    const rules = operatorRules([
      { code: "6100", action: "fail", words: "busy: we do not retry this line" },
      { text: "route (withdrawn)", action: "fail" },
      { code: ["7000"], text: "quota", action: "retry", words: "quota" },
    ]);
    expect(explainFailure({ resultCode: "6100", resultInfo: "Fax Number Busy" }, rules)).toMatchObject({
      action: "fail",
      words: "busy: we do not retry this line",
    });
    expect(explainFailure({ resultInfo: "Route (Withdrawn) today" }, rules)).toMatchObject({
      rule: "queue.resultRules[1]",
      action: "fail",
      words: '"Route (Withdrawn) today"',
    });
    expect(explainFailure({ resultInfo: "route withdrawn" }, rules).rule).toBeNull();
    expect(explainFailure({ resultCode: "7000", resultInfo: "something else" }, rules).rule).toBeNull();
    expect(explainFailure({ resultCode: "7000", resultInfo: "Quota exceeded" }, rules).rule).toBe(
      "queue.resultRules[2]",
    );
  });

  it("answers on a long hostile text (its time is a bench row: bench/hostile-input.bench.ts)", () => {
    const text = `${"no ".repeat(50_000)}fax${" a".repeat(50_000)}`;
    const found = explainFailure(
      { resultCode: "x", resultInfo: text, errorInfo: text },
      operatorRules([{ text: "aaaa", action: "fail" }]),
    );
    expect(found.rule).toBeNull();
  });
});

describe("queue.resultRules in the config", () => {
  it("accepts a rule and refuses one with neither code nor text, naming the key", () => {
    expect(
      configSchema.parse({ queue: { resultRules: [{ code: "6100", action: "fail" }] } }).queue.resultRules,
    ).toHaveLength(1);
    const bad = configSchema.safeParse({ queue: { resultRules: [{ action: "retry" }] } });
    expect(bad.success).toBe(false);
    if (!bad.success) expect(bad.error.issues[0]!.path.join(".")).toBe("queue.resultRules.0");
    expect(configSchema.safeParse({ queue: { resultRules: [{ text: "x", action: "maybe" }] } }).success).toBe(false);
  });
});
