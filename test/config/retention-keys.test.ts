// The retention section: durations and "forever", and the keys of before read into it (named in
// retention.oldKeys, so start and doctor can warn), a value already in the section winning.
import { describe, expect, it } from "vitest";
import { validateConfig } from "../../src/config/load.js";
import { oldRetentionKeysWarning } from "../../src/config/retention.js";

const DAY = 86_400_000;
const base = {
  api: { baseUrl: "https://fax.example.com" },
  users: [{ name: "a", email: "a@example.com", apiKey: "k" }],
};

describe("retention config", () => {
  it("reads durations and forever, with the defaults", () => {
    const c = validateConfig({
      ...base,
      retention: { sent: "7d", received: "forever", users: { a: { service: "1d" } } },
    });
    expect(c.retention).toMatchObject({ sent: 7 * DAY, received: null, outbox: 30 * DAY, spoolDone: 7 * DAY });
    expect(c.retention.users.a).toEqual({ service: DAY });
    expect(c.retention.oldKeys).toEqual([]);
    expect(() => validateConfig({ ...base, retention: { sent: 30 } })).toThrow(/retention\.sent/);
  });

  it("moves the keys of before into the section and names them; the section wins", () => {
    const c = validateConfig({
      ...base,
      queue: { retentionDays: 10 },
      inbound: { retentionDays: 0 },
      spool: { root: "/tmp/s", doneRetentionDays: 0 },
      retention: { sent: "2d" },
    });
    expect(c.retention).toMatchObject({ sent: 2 * DAY, received: 0, spoolDone: null });
    expect(c.retention.oldKeys).toEqual(["queue.retentionDays", "inbound.retentionDays", "spool.doneRetentionDays"]);
    expect(oldRetentionKeysWarning(c.retention)).toMatch(/^queue\.retentionDays, .* are read as the retention section/);
    // a value that is no number stays where it was and is refused there by name
    expect(() => validateConfig({ ...base, queue: { retentionDays: "x" } })).toThrow(/queue/);
  });
});
