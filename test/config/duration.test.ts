import { describe, expect, it } from "vitest";
import { duration, formatDuration, parseDuration } from "../../src/config/duration.js";

describe("config durations", () => {
  it("read a number and its unit as milliseconds", () => {
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("30s")).toBe(30_000);
    expect(parseDuration("1.5m")).toBe(90_000);
    expect(parseDuration(" 24h ")).toBe(86_400_000);
    expect(parseDuration("90d")).toBe(90 * 86_400_000);
    for (const bad of ["30", "5 minutes", "-1s", "1w", "", "h"]) expect(parseDuration(bad), bad).toBeNull();
  });

  it("refuse what is not a duration or out of bounds, naming the forms and the bounds", () => {
    const s = duration({ min: "1s", max: "1h" });
    expect(s.parse("5m")).toBe(300_000);
    const bad = s.safeParse("5 minutes");
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toMatch(/"30s", "5m", "24h" or "90d".*got "5 minutes"/);
    expect(s.safeParse("2h").error?.issues[0]?.message).toBe('must be between 1s and 1h, got "2h"');
    expect(duration({ min: "1s" }).safeParse("500ms").error?.issues[0]?.message).toBe(
      'must be at least 1s, got "500ms"',
    );
    // a default goes through the same reading
    expect(duration().prefault("24h").parse(undefined)).toBe(86_400_000);
  });

  it("are written back in the largest unit that says them exactly", () => {
    expect(formatDuration(86_400_000)).toBe("1d");
    expect(formatDuration(90_000)).toBe("90s");
    expect(formatDuration(1500)).toBe("1500ms");
    expect(formatDuration(0)).toBe("0ms");
  });
});
