// The pure rules behind the SMTP replies: relay refusals, who may send, AUTH only over TLS or
// loopback, passwords, subject overrides.
import { localCounters } from "../../src/fleet-counter.js";
import { describe, expect, it } from "vitest";
import { parseSubjectOverrides, wallTimeToUtc } from "../../src/intake/mail/subject-overrides.js";
import { hashPassword, verifyPassword } from "../../src/auth/password.js";
import { checkRecipient } from "../../src/smtp/recipient-address.js";
import { buildBlockList, inList } from "../../src/auth/client-address.js";
import { UserIndex } from "../../src/auth/user-index.js";
import { authAllowed, decideSender } from "../../src/smtp/sender-policy.js";
import { RateLimiter } from "../../src/auth/rate-limit.js";
import { manualClock } from "../helpers/store.js";
import { USERS } from "./harness.js";

const DOMAINS = ["fax.example.com", "Fax.Example.NET"];

describe("checkRecipient", () => {
  it.each([
    "someone@gmail.com",
    "victim%gmail.com@fax.example.com",
    "@fax.example.com:victim@gmail.com",
    '"victim@gmail.com"@fax.example.com',
    '"15551234567"@fax.example.com',
    "victim@gmail.com@fax.example.com",
    "gmail.com!victim@fax.example.com",
    "15551234567@fax.example.com.evil.example",
    "15551234567@evil.example",
    "15551234567@sub.fax.example.com",
    "15551234567@fax.example",
    "15551234567",
    "5551234567@[127.0.0.1]",
    "a,b@fax.example.com",
  ])("refuses %s as relay denied (550 5.7.1) with a reason", (addr) => {
    const r = checkRecipient(addr, DOMAINS, "1");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.refusal.smtpReply).toMatch(/^550 5\.7\.1 Relay denied for <.*>: \S+/);
  });

  it("accepts numbers in the usual spellings, domains case-insensitively, with the default country code", () => {
    for (const [addr, e164] of [
      ["15551234567@fax.example.com", "+15551234567"],
      ["+1-555-123-4567@FAX.example.com", "+15551234567"],
      ["(555)123.4567@fax.example.net", "+15551234567"],
      ["00442071838750@fax.example.com", "+442071838750"],
      ["+442071838750@fax.example.com.", "+442071838750"],
    ] as const) {
      const r = checkRecipient(addr, DOMAINS, "1");
      expect(r, addr).toEqual({
        ok: true,
        target: { kind: "number", e164, local: addr.slice(0, addr.lastIndexOf("@")) },
      });
    }
  });

  it("tells what is wrong with a bad number (553 5.1.3)", () => {
    const r = checkRecipient("123@fax.example.com", DOMAINS, "1");
    expect(r.ok ? null : r.refusal.smtpReply).toEqual(
      expect.stringMatching(/^553 5\.1\.3 Bad fax number in <123@fax\.example\.com>: .*4 to 15 digits/),
    );
    const long = checkRecipient("1234567890123456789@fax.example.com", DOMAINS, "1");
    expect(long.ok).toBe(false);
    if (!long.ok) expect(long.refusal.smtpReply).toMatch(/^553 5\.1\.3 .*digits/);
  });

  it("takes letters as a contact name", () => {
    expect(checkRecipient("acme.billing@fax.example.com", DOMAINS, "1")).toEqual({
      ok: true,
      target: { kind: "name", name: "acme.billing", local: "acme.billing" },
    });
  });
});

describe("decideSender", () => {
  const index = new UserIndex(USERS);
  const base = { trusted: true, authMode: "optional" as const, authOffered: true };

  it("knows users by e-mail and alias, case-insensitively", () => {
    expect(decideSender(index, { ...base, address: "ALICE@example.com" })).toMatchObject({
      ok: true,
      user: { name: "alice" },
    });
    expect(decideSender(index, { ...base, address: "alice.archer@example.ORG" })).toMatchObject({
      ok: true,
      user: { name: "alice" },
    });
  });

  it("refuses unknown and empty senders with 550 5.7.1", () => {
    for (const address of ["mallory@evil.example", "alice@example.com.evil", ""]) {
      const d = decideSender(index, { ...base, address });
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.refusal.smtpReply).toMatch(/^550 5\.7\.1 Sender .* is not a user of this fax gateway/);
    }
  });

  it("an authenticated user may only send as themselves", () => {
    expect(
      decideSender(index, { ...base, trusted: false, address: "alice@example.com", authenticatedAs: "alice" }).ok,
    ).toBe(true);
    const d = decideSender(index, { ...base, address: "bob@example.com", authenticatedAs: "alice" });
    expect(d.ok).toBe(false);
    if (!d.ok)
      expect(d.refusal.smtpReply).toMatch(/^550 5\.7\.1 Authenticated as alice, you may only send as yourself/);
  });

  it("untrusted and unauthenticated is refused; auth: required refuses even trusted networks", () => {
    const d = decideSender(index, { ...base, trusted: false, address: "alice@example.com" });
    expect(!d.ok && d.refusal.smtpReply).toMatch(/^550 5\.7\.1 .*authenticate first/);
    const r = decideSender(index, { ...base, authMode: "required", address: "alice@example.com" });
    expect(!r.ok && r.refusal.smtpReply).toMatch(/^530 5\.7\.0 Authentication required/);
  });
});

describe("network rules", () => {
  it("trusted networks by net.BlockList, IPv4-mapped IPv6 included", () => {
    const list = buildBlockList(["10.0.0.0/8", "192.168.1.7", "::1/128"]);
    expect(inList(list, "10.20.30.40")).toBe(true);
    expect(inList(list, "::ffff:10.1.1.1")).toBe(true);
    expect(inList(list, "192.168.1.7")).toBe(true);
    expect(inList(list, "192.168.1.8")).toBe(false);
    expect(inList(list, "::1")).toBe(true);
    expect(inList(list, "not-an-ip")).toBe(false);
  });

  it("each list answers for itself, however often an address is asked about", () => {
    const ten = buildBlockList(["10.0.0.0/8"]);
    const other = buildBlockList(["192.168.0.0/16"]);
    for (let i = 0; i < 3; i += 1) {
      expect(inList(ten, "10.1.2.3")).toBe(true);
      expect(inList(other, "10.1.2.3")).toBe(false);
      expect(inList(other, "::ffff:192.168.4.4")).toBe(true);
      expect(inList(ten, "::ffff:192.168.4.4")).toBe(false);
    }
    // past the answers kept: still the same answers
    for (let i = 0; i < 5000; i += 1) expect(inList(ten, `10.0.${i >> 8}.${i & 255}`)).toBe(true);
    expect(inList(ten, "11.0.0.1")).toBe(false);
    expect(inList(ten, "10.1.2.3")).toBe(true);
    // a forwarded-for header's text is no address, however long
    expect(inList(ten, `10.1.2.3, ${"x".repeat(5000)}`)).toBe(false);
  });

  it("AUTH only over TLS or from loopback, never when auth is off", () => {
    expect(authAllowed("optional", { secure: false, remoteAddress: "203.0.113.9" })).toBe(false);
    expect(authAllowed("required", { secure: true, remoteAddress: "203.0.113.9" })).toBe(true);
    expect(authAllowed("optional", { secure: false, remoteAddress: "127.0.0.1" })).toBe(true);
    expect(authAllowed("optional", { secure: false, remoteAddress: "::ffff:127.0.0.1" })).toBe(true);
    expect(authAllowed("off", { secure: true, remoteAddress: "127.0.0.1" })).toBe(false);
  });

  it("rate limit is a sliding minute per key", () => {
    const clock = manualClock();
    const rl = new RateLimiter(2, clock, localCounters, "test");
    expect([rl.take("a"), rl.take("a"), rl.take("a"), rl.take("b")]).toEqual([true, true, false, true]);
    clock.advance(61_000);
    expect(rl.take("a")).toBe(true);
  });

  it("rate limit answers as a count of the last minute does, over thousands of messages", () => {
    // the model: every hit of the last minute counted afresh at each take
    const clock = manualClock();
    const limit = 300;
    const rl = new RateLimiter(limit, clock, localCounters, "test");
    const model: number[] = [];
    let seed = 7;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    let refused = 0;
    for (let i = 0; i < 20_000; i++) {
      clock.advance(rand(50) === 0 ? rand(3000) : rand(20));
      const now = clock.now();
      const inWindow = model.filter((t) => t > now - 60_000).length;
      const expected = inWindow < limit;
      if (expected) model.push(now);
      else refused += 1;
      expect(rl.take("a"), `take ${i}`).toBe(expected);
    }
    // both answers occur, so the comparison covered the limit and the window sliding
    expect(refused).toBeGreaterThan(1000);
    expect(model.length).toBeGreaterThan(1000);
  });

  it("rate limit after the clock is set back: the hits of the last minute still count, later ones are forgotten", () => {
    const clock = manualClock();
    const rl = new RateLimiter(3, clock, localCounters, "test");
    expect([rl.take("a"), rl.take("a")]).toEqual([true, true]);
    clock.advance(30_000);
    expect(rl.take("a")).toBe(true); // 3 in the minute
    expect(rl.take("a")).toBe(false);
    clock.advance(-20_000); // set back, before the third hit
    expect(rl.take("a")).toBe(true); // the third is forgotten: 2 + this one
    expect(rl.take("a")).toBe(false);
    clock.advance(51_000); // the first two leave the window
    expect([rl.take("a"), rl.take("a"), rl.take("a")]).toEqual([true, true, false]);
  });
});

describe("passwords", () => {
  it("hashes with scrypt and verifies only the right password", async () => {
    const h = await hashPassword("correct horse");
    expect(h).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(h).not.toContain("correct horse");
    expect(await verifyPassword("correct horse", h)).toBe(true);
    expect(await verifyPassword("correct hors", h)).toBe(false);
    expect(await hashPassword("correct horse")).not.toBe(h); // salted
  });

  it("refuses damaged or hostile hashes without throwing", async () => {
    for (const h of [
      "",
      "plain",
      "scrypt$3$8$1$AAAA$AAAA",
      "scrypt$1073741824$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAA==",
      "bcrypt$x",
    ]) {
      expect(await verifyPassword("x", h)).toBe(false);
    }
  });
});

describe("subject overrides", () => {
  it("finds [cover], [nocover] and [at ...] and removes them", () => {
    expect(parseSubjectOverrides("Invoice [cover] 42")).toEqual({ subject: "Invoice 42", cover: true });
    expect(parseSubjectOverrides("[NoCover] Invoice")).toEqual({ subject: "Invoice", cover: false });
    expect(parseSubjectOverrides("Lab results [reply]")).toEqual({ subject: "Lab results", reply: true });
    expect(parseSubjectOverrides("Invoice [at 2026-11-22 09:05]")).toEqual({
      subject: "Invoice",
      at: "2026-11-22T09:05",
    });
    expect(parseSubjectOverrides("Plain [draft] subject")).toEqual({ subject: "Plain [draft] subject" });
  });

  it("refuses an unreadable time with 554 5.6.0 naming the format", () => {
    expect(() => parseSubjectOverrides("x [at tomorrow]")).toThrow(/send time/);
    expect(() => parseSubjectOverrides("x [at 2026-02-30 10:00]")).toThrow(/send time/);
  });

  it("places wall times in the zone, across daylight saving changes", () => {
    expect(wallTimeToUtc("2026-07-01T09:00", "America/New_York")).toBe("2026-07-01T13:00:00.000Z");
    expect(wallTimeToUtc("2026-12-01T09:00", "America/New_York")).toBe("2026-12-01T14:00:00.000Z");
    expect(wallTimeToUtc("2026-03-29T12:00", "Europe/Berlin")).toBe("2026-03-29T10:00:00.000Z");
    expect(wallTimeToUtc("2026-03-29T12:00", "Not/AZone")).toBe("2026-03-29T12:00:00.000Z");
  });
});
