// doctor's comparison of the rule with the account's storeFaxesTime.
import { describe, expect, it } from "vitest";
import { retentionSchema } from "../../src/config/retention.js";
import { storeTimeCheck } from "../../src/retention/service-time.js";

const rule = retentionSchema.parse({ sent: "30d", received: "90d" });

describe("storeFaxesTime against the retention rule", () => {
  it("warns when the service purges before the rule, or does not say", () => {
    expect(storeTimeCheck("30", rule)).toMatchObject({
      warn: true,
      detail: expect.stringMatching(/after 30 days .*before the rule's 90 days/),
    });
    expect(storeTimeCheck(undefined, rule)).toMatchObject({ warn: true });
    expect(storeTimeCheck("365", rule).warn).toBeUndefined();
    expect(storeTimeCheck("0", rule).detail).toMatch(/until deleted/);
    expect(storeTimeCheck("30", retentionSchema.parse({ service: "7d" })).warn).toBeUndefined();
  });
});
