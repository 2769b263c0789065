// Toll fraud at the door: premium-rate, emergency and other special numbers get 553 5.1.3 at RCPT
// naming the rule, in a real SMTP session; operator rules (gateway and per user) allow or deny.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkDestination } from "../../src/recipients/destination-policy.js";
import { converse } from "../helpers/raw-smtp.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { DOMAIN, USERS, jobIdOf, stopEmulator, withRig } from "./harness.js";

let emu: TestEmulator;
beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => {
  await stopEmulator(emu);
});

const MESSAGE = "From: alice@example.com\r\nSubject: policy\r\n\r\nHello.\r\n";

describe("destination policy over SMTP", () => {
  it("refuses premium, emergency, network and personal numbers with 553 5.1.3 naming the rule, and queues the ordinary one", async () => {
    await withRig(emu, {}, async (rig) => {
      const rcpts = [
        "19005550199",
        "1-976-555-0199",
        "+44 909 000 0000",
        "+882 3123456789",
        "1 911 555 0100",
        "+44 70 1234 5678",
        "15551234567",
      ].map((n) => `${n.replace(/ /g, "")}@${DOMAIN}`);
      const r = await converse(rig.port, "alice@example.com", rcpts, MESSAGE);
      const replies = r.slice(3, 3 + rcpts.length);
      expect(replies[0]).toMatch(
        /^553 5\.1\.3 Destination not allowed <19005550199@.*premium-rate number.*built-in rule "premium-rate"/,
      );
      expect(replies[1]).toMatch(/^553 5\.1\.3 .*premium-rate/);
      expect(replies[2]).toMatch(/^553 5\.1\.3 .*premium-rate/);
      expect(replies[3]).toMatch(/^553 5\.1\.3 .*"international-network"/);
      expect(replies[4]).toMatch(/^553 5\.1\.3 .*"emergency"/);
      expect(replies[5]).toMatch(/^553 5\.1\.3 .*"personal-number"/);
      expect(replies[6]).toMatch(/^250 /);
      const queued = r.at(-2)!;
      expect(queued).toMatch(/^250 2\.0\.0 queued as /);
      const job = (await rig.store.getJob(jobIdOf(queued)))!;
      expect(job.recipients.map((x) => x.number)).toEqual(["+15551234567"]);
    });
  });

  it("applies per-user rules before the gateway rules: an allow for alice, a country deny for bob", async () => {
    const users = [
      { ...USERS[0]!, destinations: { rules: [{ action: "allow" as const, pattern: "+1 900 555 01##" }] } },
      { ...USERS[1]!, destinations: { rules: [{ action: "deny" as const, country: "GB" }] } },
    ];
    const gateway = {
      refuse: ["premium-rate" as const, "emergency" as const],
      rules: [{ action: "deny" as const, prefix: "+1 555 999" }],
    };
    await withRig(emu, { users, config: { destinations: gateway } }, async (rig) => {
      const a = await converse(
        rig.port,
        "alice@example.com",
        [`19005550142@${DOMAIN}`, `19005550299@${DOMAIN}`, `15559991234@${DOMAIN}`],
        null,
      );
      expect(a[3]).toMatch(/^250 /);
      expect(a[4]).toMatch(/^553 5\.1\.3 .*premium-rate/);
      expect(a[5]).toMatch(/^553 5\.1\.3 .*refused by the rule destinations\.rules\[0\] \(deny prefix \+1 555 999\)/);
      const b = await converse(
        rig.port,
        "bob@example.com",
        [`442079460000@${DOMAIN}`, `19005550142@${DOMAIN}`, `15551234567@${DOMAIN}`],
        null,
      );
      expect(b[3]).toMatch(/^553 5\.1\.3 .*users\[bob\]\.destinations\.rules\[0\] \(deny country GB\)/);
      expect(b[4]).toMatch(/^553 5\.1\.3 .*premium-rate/);
      expect(b[5]).toMatch(/^250 /);
    });
  });
});

describe("destination policy for contact names", () => {
  it("a contact name whose number a rule denies gets 553 5.1.3 naming the rule", async () => {
    const users = [
      { ...USERS[0]!, destinations: { rules: [{ action: "deny" as const, prefix: "+1 555 010 01" }] } },
      USERS[1]!,
    ];
    await withRig(emu, { users }, async (rig) => {
      const r = await converse(
        rig.port,
        "alice@example.com",
        [`acme.billing@${DOMAIN}`, `initech.front.desk@${DOMAIN}`],
        null,
      );
      expect(r[3]).toMatch(
        /^553 5\.1\.3 Destination not allowed <acme\.billing@.*\+15550100100 is refused by the rule users\[alice\]\.destinations\.rules\[0\] \(deny prefix \+1 555 010 01\)/,
      );
      expect(r[4]).toMatch(/^250 /);
    });
  });
});

describe("checkDestination", () => {
  it.each([
    ["+19005550199", "premium-rate"],
    ["+19765550199", "premium-rate"],
    ["+449090000000", "premium-rate"],
    ["+33899123456", "premium-rate"],
    ["+491375555555", "shared-cost"],
    ["+80812345678", "shared-cost"],
    ["+447012345678", "personal-number"],
    ["+8823123456789", "international-network"],
    ["+881612345678", "international-network"],
    ["+19115550100", "emergency"],
    ["+12129111234", "emergency"],
    ["+4911200000", "emergency"],
  ])("%s is refused as %s", (n, rule) => {
    expect(checkDestination(n)).toEqual({ ok: false, rule, reason: expect.stringContaining(`"${rule}"`) });
  });

  it.each([
    "+15551234567",
    "+12025550123",
    "+442079460000",
    "+443001234567",
    "+80012345678",
    "+4915212345678",
    "+441132345678",
  ])("%s is allowed", (n) => {
    expect(checkDestination(n)).toEqual({ ok: true });
  });

  it("a category left out of refuse is allowed; an allow by category overrides it", () => {
    expect(checkDestination("+19005550199", { refuse: ["emergency"] })).toEqual({ ok: true });
    expect(checkDestination("+19005550199", { rules: [{ action: "allow", category: "premium-rate" }] })).toEqual({
      ok: true,
    });
  });

  it("a long hostile pattern against a long number answers (its time: bench/hostile-input.bench.ts)", () => {
    // 38 digits wanted, 15 given: no match, so the number is not denied by it
    expect(
      checkDestination("+123456789012345", { rules: [{ action: "deny", pattern: `+${"#".repeat(38)}*` }] }),
    ).toEqual({ ok: true });
  });
});
