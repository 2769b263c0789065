// inbound.routes[].match.text (issue 51): rules on a fax's OCR text. A whole gateway with OCR on:
// faxes wait in the default route's inbox until their text is read, then a phrase or a pattern
// routes them; without a match they stay where the default put them. The wait's bound and the
// pattern's time bound are held with the real store and the real rule code.
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { validateConfig } from "../../src/config/load.js";
import { findExecutable } from "../../src/fs/executable.js";
import { ruleMatches } from "../../src/inbound/routes.js";
import { TextRouting } from "../../src/inbound/text-routing.js";
import { silentLogger } from "../../src/log/logger.js";
import { getReceivedText } from "../../src/store/sql/received-text.js";
import { emulatorInbound } from "../helpers/emulator.js";
import { startGateway, TEST_USERS, type TestGateway } from "../helpers/gateway.js";
import { scannedFax } from "../helpers/scanned-fax.js";
import { testIntake } from "../helpers/collaborators.js";
import { receivedInput, tempStore, type TempStore } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";

const HAVE_OCR = findExecutable("ocrmypdf") !== null && findExecutable("gs") !== null;
if (!HAVE_OCR) console.warn("text routing with OCR skipped: ocrmypdf or ghostscript is absent");

const INBOUND = {
  groups: { front: { members: ["alice"] }, auth: { members: ["alice"] }, legal: { members: ["bob"] } },
  routes: [
    { name: "prior auth", match: { text: "Prior Authorization" }, deliver: [{ inbox: "auth" }] },
    { name: "court", match: { text: { pattern: "matter\\s+\\d{4}-\\d+" } }, deliver: [{ inbox: "legal" }] },
  ],
  default: [{ inbox: "front" }],
};

describe("match.text rules", () => {
  const cfg = validateConfig({ api: { baseUrl: "sandbox" }, users: TEST_USERS, inbound: INBOUND }).inbound;
  const facts = { dialled: null, sender: null, csid: null, user: "alice" };

  it("a phrase is found without case and across line breaks; a pattern as a regular expression", () => {
    const [auth, court] = cfg.routes;
    expect(ruleMatches(auth!, { ...facts, text: "PRIOR\nAUTHORIZATION request" })).toBe(true);
    expect(ruleMatches(auth!, { ...facts, text: "prior authorizations" })).toBe(false);
    expect(ruleMatches(auth!, { ...facts, text: null })).toBe(false);
    expect(ruleMatches(auth!, { ...facts })).toBe(false);
    expect(ruleMatches(court!, { ...facts, text: "Notice in Matter 2026-114" })).toBe(true);
    expect(ruleMatches(court!, { ...facts, text: "Notice in matter 2026" })).toBe(false);
  });

  it("a pattern that backtracks is cut off at its time bound and does not match", () => {
    const slow = validateConfig({
      api: { baseUrl: "sandbox" },
      users: TEST_USERS,
      inbound: {
        // 2^40 steps for the first text: cut off at any bound; the bound leaves a busy machine's
        // pauses room for the short text, which must match (20 ms did not, once, on two busy cores)
        routes: [{ name: "slow", match: { text: { pattern: "^(a+)+$", within: "250ms" } }, deliver: [{ inbox: "x" }] }],
        groups: { x: { members: ["alice"] } },
      },
    }).inbound.routes[0]!;
    // the CPU it took, not the time: a loaded machine lengthens the wait, never the work; uncut,
    // the pattern would work for hours
    const before = process.cpuUsage();
    expect(ruleMatches(slow, { ...facts, text: `${"a".repeat(40)}b` })).toBe(false);
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1000).toBeLessThan(2000);
    expect(ruleMatches(slow, { ...facts, text: "aaaa" })).toBe(true);
  });

  it("refuses a pattern that is not a regular expression, naming the key", () => {
    expect(() =>
      validateConfig({
        api: { baseUrl: "sandbox" },
        users: TEST_USERS,
        inbound: { routes: [{ name: "bad", match: { text: { pattern: "(" } }, deliver: [{ receiver: true }] }] },
      }),
    ).toThrow("inbound.routes[0].match.text.pattern: expected a regular expression");
  });

  let t: TempStore | null = null;
  afterEach(() => {
    t?.cleanup();
    t = null;
  });

  it.each([
    { reads: true, after: "no text in time" },
    // OCR off: the fax was held only for the look for its reply code
    { reads: false, after: "its reply code not looked for in time" },
  ])(
    "a fax held past its wait is routed by the other rules, saying why (OCR reads: $reads)",
    async ({ reads, after }) => {
      t = tempStore();
      const intake = testIntake({
        store: t.store,
        clientFor: () => {
          throw new Error("no service calls when routing a kept fax");
        },
        inbound: () => cfg,
        users: () => [],
        me: () => {
          throw new Error("no service calls when routing a kept fax");
        },
        dataDir: t.dir,
        text: { poke: () => undefined, waitForMs: 0, reads, replies: async () => false },
      });
      const { fax } = await t.store.keepReceived(
        receivedInput({
          groups: ["front"],
          // the wait is already over, and no OCR ever ran
          readText: { waitsUntil: new Date(Date.now() - 1000).toISOString() },
        }),
      );
      const routing = new TextRouting({ store: t.store, intake, logger: silentLogger(), intervalMs: 60_000 });
      await routing.sweep();
      const events = await t.store.listReceivedEvents(fax.id);
      expect(events.at(-1)).toMatchObject({ action: "routed", detail: `after ${after}: rule default` });
      expect((await getReceivedText(t.store.sql, fax.id))?.waitsUntil).toBeNull();
      // routed once: a second sweep finds nothing held
      await routing.sweep();
      expect((await t.store.listReceivedEvents(fax.id)).length).toBe(events.length);
    },
  );
});

let rig: TestGateway | null = null;

async function arrive(lines: string[], seed: number): Promise<string> {
  const pdf = await scannedFax(lines, { seed });
  return emulatorInbound(
    rig!.emu,
    { email: "alice@example.com", callerId: "+15557654321", to: "+15550100200" },
    pdf,
    "s.pdf",
  );
}

describe.skipIf(!HAVE_OCR)("text rules in a gateway with OCR", () => {
  beforeAll(async () => {
    rig = await startGateway({
      name: "text-routes",
      config: ({ dir }) => ({
        notify: {
          from: "faxgate@example.com",
          transport: `outbox:${path.join(dir, "outbox")}`,
          inbound: { enabled: true, interval: "1s", mailBacklog: true },
        },
        inbound: INBOUND,
        ocr: { enabled: true, waitFor: "10m" },
      }),
    });
  }, 120_000);
  afterAll(() => rig?.stop());

  it("waits in the default inbox, then a phrase routes it; a fax without a match stays", async () => {
    const auth = await arrive(["PRIOR AUTHORIZATION REQUEST", "Patient: Maria Alvarez"], 21);
    const lab = await arrive(["Lab results", "Glucose normal"], 22);
    const kept = async (messageId: string) => (await rig!.gw.store.listReceived({ messageId }))[0] ?? null;
    const first = await waitUntil(() => kept(auth), "the authorisation kept", 30_000, 100);
    // held: in the default route's inbox only, until its text is known
    expect(first.groups).toEqual(["front"]);
    const routedAgain = async (messageId: string) => {
      const f = await kept(messageId);
      if (!f) return null;
      const ev = await rig!.gw.store.listReceivedEvents(f.id);
      return ev.filter((e) => e.action === "routed").length === 2 ? { f: (await kept(messageId))!, ev } : null;
    };
    const a = await waitUntil(() => routedAgain(auth), "the authorisation routed by its text", 180_000, 250);
    expect(a.f.groups).toEqual(["front", "auth"]);
    expect(a.ev.map((e) => `${e.action}: ${e.detail ?? ""}`)).toEqual([
      expect.stringMatching(/^stored: /),
      "routed: rule waiting for its text: group front",
      expect.stringMatching(/^text read: /),
      "routed: after its text read: rule prior auth",
    ]);
    const l = await waitUntil(() => routedAgain(lab), "the lab result routed after its text", 180_000, 250);
    expect(l.f.groups).toEqual(["front"]);
    expect(l.ev.at(-1)?.detail).toBe("after its text read: rule default");
  }, 300_000);
});
