// The fleet's shared account budget (store/sql/fleet-budget.ts) on a real PostgreSQL: three
// gateways (three stores on one database, each its own pool) asking for slots at once never let
// out more than the account's rate between them; a 429 one of them meets closes the window for
// the others; history calls are counted for the fleet; the concurrency and the following of
// faxes are split so that they add up to one gateway's, not three.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/index.js";
import { FleetBudget } from "../../src/store/sql/fleet-budget.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { waitUntil } from "../helpers/wait.js";
import { tempFolder } from "../tmp-dir.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("fleet budget tests");

const RATE = 10;

async function fleetOf(n: number, opts: { historyPerMinute?: number; concurrency?: number } = {}) {
  const url = await postgres.database();
  const dir = tempFolder("fleet");
  const stores: PgStore[] = [];
  const budgets: FleetBudget[] = [];
  for (let i = 0; i < n; i++) {
    const store = await PgStore.open({ url, dataDir: path.join(dir, `gw${i}`) });
    stores.push(store);
    budgets.push(
      new FleetBudget({
        db: store.fleetDb()!,
        gateway: `gw${i}`,
        account: async () => "acct-1",
        ratePerSecond: RATE,
        dispatchShare: 0.5,
        concurrency: opts.concurrency ?? 4,
        historyPerMinute: opts.historyPerMinute ?? 8,
        logger: silentLogger(),
      }),
    );
  }
  for (const b of budgets) await b.start();
  // every member's view includes the others once each has renewed after the last joined
  for (const b of budgets) await b.start();
  return {
    budgets,
    /** The fleet's shared row, as any gateway's store reads it. */
    row: () =>
      stores[0]!
        .fleetDb()!
        .get<{ closed_until: number; pace: number; history_closed_until: number }>(
          "SELECT closed_until, pace, history_closed_until FROM fleet_budget WHERE account = 'acct-1'",
        ),
    async close() {
      for (const b of budgets) await b.stop();
      for (const s of stores) await s.close();
    },
  };
}

/** The most of `times` (ms) within any one second. */
function busiestSecond(times: number[]): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[i]! - t[j]! >= 1000) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

describe.skipIf(postgres.missing !== null)("the fleet's account budget on PostgreSQL", () => {
  it("three gateways asking at once get no more than the account's rate between them, both lanes together", async () => {
    const fleet = await fleetOf(3);
    try {
      const times: number[] = [];
      const t0 = performance.now();
      // each gateway has calls of both lanes waiting, far more than the rate allows in the run
      await Promise.all(
        fleet.budgets.flatMap((b, i) =>
          Array.from({ length: 12 }, (_, k) =>
            b.slot(k % 2 === 0 || i === 0 ? "dispatch" : "others").then(() => times.push(performance.now())),
          ),
        ),
      );
      const took = performance.now() - t0;
      // 36 calls at 10 a second: about 3.5 s. In the busiest second, the rate and the timers'
      // jitter (a slot fired late lands nearer the next ones: 12 seen once on two starved cores,
      // docs/ha.md allows 3-4), never the 3x of three gateways each at the full rate
      expect(times).toHaveLength(36);
      expect(busiestSecond(times)).toBeLessThanOrEqual(RATE + 3);
      expect(took).toBeGreaterThan(3000);
    } finally {
      await fleet.close();
    }
  }, 60_000);

  it("one gateway takes its waiting calls' slots in batches, not a transaction each", async () => {
    // alone, so no other member books the clock ahead of it: with three, once the clock is booked
    // LOOKAHEAD_MS ahead each batch may find room for one slot only, and whether any found more
    // was the machine's timing (36 of 36 seen once on a quiet machine)
    const fleet = await fleetOf(1);
    try {
      const b = fleet.budgets[0]!;
      await Promise.all(Array.from({ length: 12 }, () => b.slot("dispatch")));
      expect(b.slotsTaken).toBeGreaterThanOrEqual(12);
      expect(b.batches).toBeLessThan(12);
    } finally {
      await fleet.close();
    }
  }, 60_000);

  it("a 429 met by one gateway closes the window for all, and halves the fleet's pace", async () => {
    const fleet = await fleetOf(2);
    try {
      const [a, b] = fleet.budgets as [FleetBudget, FleetBudget];
      await a.slot("others");
      const t0 = performance.now();
      a.rateLimited(1500);
      // rateLimited writes in the background: once the row shows it, b's next slot is after the
      // window the 429 closed, and b claims at the halved pace (its share of 10/s over 2 s: 5, not 10)
      await waitUntil(async () => ((await fleet.row())?.closed_until ?? 0) > 0, "the 429 written to the fleet's row");
      await b.slot("dispatch");
      // the window is 1.5 s from the write, which came after t0 (one machine: the clocks agree)
      expect(performance.now() - t0).toBeGreaterThan(1400);
      expect(b.claimRoom(2000)).toBeLessThanOrEqual((RATE / 2 / 2) * 2);
    } finally {
      await fleet.close();
    }
  }, 60_000);

  it("history calls are counted for the fleet, and a refused one closes history for all", async () => {
    const fleet = await fleetOf(2, { historyPerMinute: 3 });
    try {
      const [a, b] = fleet.budgets as [FleetBudget, FleetBudget];
      expect(await a.historySlot()).toBe(0);
      expect(await b.historySlot()).toBe(0);
      expect(await a.historySlot()).toBe(0);
      // the fourth of the minute waits, whichever gateway asks
      expect(await b.historySlot()).toBeGreaterThan(55_000);
      expect(b.historyAvailable(0)).toBe(false);
    } finally {
      await fleet.close();
    }
    const again = await fleetOf(2, { historyPerMinute: 8 });
    try {
      const [a, b] = again.budgets as [FleetBudget, FleetBudget];
      expect(await a.historySlot()).toBe(0);
      a.historyLimited(20_000);
      // historyLimited writes in the background: once the row shows it, b's next history call waits
      await waitUntil(
        async () => ((await again.row())?.history_closed_until ?? 0) > Date.now() + 10_000,
        "the history 429 written to the fleet's row",
      );
      expect(await b.historySlot()).toBeGreaterThan(18_000);
    } finally {
      await again.close();
    }
  }, 60_000);

  it("the concurrency and the faxes to follow are shared out: one gateway's worth in all", async () => {
    const fleet = await fleetOf(3, { concurrency: 4 });
    try {
      expect(fleet.budgets.map((b) => b.fleetSize())).toEqual([3, 3, 3]);
      expect(fleet.budgets.map((b) => b.concurrencyShare()).reduce((s, c) => s + c, 0)).toBe(4);
      const users = Array.from({ length: 30 }, (_, i) => `user${i}`);
      for (const u of users) expect(fleet.budgets.filter((b) => b.owns(u))).toHaveLength(1);
      // a gateway that leaves hands its share to the others at their next heartbeat
      await fleet.budgets[2]!.stop();
      await waitUntil(
        () => fleet.budgets.slice(0, 2).every((b) => b.fleetSize() === 2),
        "both others' heartbeats after the leave",
      );
      expect(fleet.budgets[0]!.fleetSize()).toBe(2);
      expect(fleet.budgets[0]!.concurrencyShare() + fleet.budgets[1]!.concurrencyShare()).toBe(4);
      for (const u of users) expect(fleet.budgets.slice(0, 2).filter((b) => b.owns(u))).toHaveLength(1);
    } finally {
      await fleet.close();
    }
  }, 60_000);
});
