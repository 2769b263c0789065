// A 429 met by one gateway slows the whole fleet (issue 55), measured at the service: three
// gateways (three `faxgate start` processes) on one PostgreSQL send a backlog at the fleet's
// rate; the emulator answers the next call, whichever gateway makes it, 429 with a Retry-After
// of RETRY_AFTER_S. The one gateway that met it writes the window's end into the shared budget
// row (store/sql/fleet-budget.ts); the others meet it at their next batch of slots, at most
// LOOKAHEAD_MS later. So from then to the window's end the emulator must count no call from any
// gateway; then calls come back, with no second 429, and every fax goes out once.
// Without the shared window (each gateway waiting out only its own 429s) the two others went on
// calling through it (see the count in the failure message).
// Skips where PostgreSQL is not installed.
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { LOOKAHEAD_MS } from "../../src/store/sql/fleet-budget.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";
import { newJob } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { type Fleet, startFleet } from "./fleet-rig.js";
import { usePgCluster } from "../helpers/store-backends.js";
import { emulatorAdmin, emulatorFaxes, numberFor, type Rig, SHORT, setFaults, tally } from "./harness.js";

const postgres = usePgCluster("fleet 429 fault test");
const pgMissing = postgres.missing;

/** The fleet's rate: every gateway's api.ratePerSecond (shared, not each one's). */
const FLEET_RATE = 4;
const RETRY_AFTER_S = 4;
/** Faxes queued: enough to keep the fleet calling through the window and after it. */
const BACKLOG = SHORT ? 60 : 120;

const admin = emulatorAdmin;

/** API calls that reached the service's routes (a fault's 429 is answered before: not counted). */
async function callsSoFar(rig: Rig): Promise<number> {
  const r = await admin<Record<string, number>>(rig, "/_emulator/requests");
  return Object.entries(r)
    .filter(([route]) => !route.includes("/_emulator/") && !route.endsWith("/ping"))
    .reduce((n, [, c]) => n + c, 0);
}

describe.skipIf(pgMissing !== null)("a 429 seen by one gateway of three", () => {
  let fleet: Fleet | undefined;

  afterAll(() => fleet?.dispose());

  it(`closes the window for the whole fleet for its Retry-After (${RETRY_AFTER_S} s), then the fleet goes on`, async () => {
    const url = await postgres.database();
    fleet = await startFleet(url, {
      delayMs: 300,
      config: {
        api: { ratePerSecond: FLEET_RATE, concurrency: 6, historyPerMinute: 60 },
        queue: { lease: "5s", reconcileGrace: "8s", pollInterval: "500ms" },
      },
      // the account's own limit at the service, above the fleet's rate: a 429 storm would show here
      account: { ratePerSecond: FLEET_RATE + 4 },
    });
    const { rig } = fleet;
    const store = await PgStore.open({ url, dataDir: path.join(rig.dir, "checker") });
    try {
      const numbers = Array.from({ length: BACKLOG }, (_, k) => numberFor(30_000 + k));
      for (const [k, n] of numbers.entries())
        await store.enqueue(newJob(rig.dir, { user: k % 2 === 0 ? "alice" : "bob", recipients: [{ number: n }] }));
      // the fleet is sending (every gateway woken by the enqueues' NOTIFY)
      await waitUntil(async () => (await emulatorFaxes(rig)).length >= 6, "the first sends", 60_000, 100);

      await setFaults(rig, { rateLimitNext: 1, retryAfter: RETRY_AFTER_S });
      await waitUntil(
        async () => (await admin<{ rateLimitNext: number }>(rig, "/_emulator/faults")).rateLimitNext === 0,
        "one call refused with 429",
        30_000,
        10,
      );
      const hitAt = Date.now();
      // slots handed out before the window was written may still be used: at most the look-ahead
      // after the write, which is itself a transaction after the 429's answer (slow on a loaded
      // machine: with 500 ms here one call came within the first second, in one run of two)
      const settle = LOOKAHEAD_MS + 1000;
      await new Promise((r) => setTimeout(r, settle - (Date.now() - hitAt)));
      const from = await callsSoFar(rig);
      const windowEnd = hitAt + RETRY_AFTER_S * 1000 - 300;
      await new Promise((r) => setTimeout(r, windowEnd - Date.now()));
      const inWindow = (await callsSoFar(rig)) - from;
      const quietMs = windowEnd - hitAt - settle;
      // then the fleet goes on: calls again within a few seconds of the window's end
      await waitUntil(async () => (await callsSoFar(rig)) > from + inWindow, "calls after the window", 30_000, 100);
      const afterMs = Date.now() - (hitAt + RETRY_AFTER_S * 1000);

      await waitUntil(
        async () =>
          (await store.listJobs({ limit: 100_000 })).every((j) =>
            (FINAL_JOB_STATES as readonly string[]).includes(j.state),
          ),
        "every job final",
        SHORT ? 120_000 : 300_000,
        500,
      );
      const faxes = await emulatorFaxes(rig);
      const t = tally(new Set(numbers), faxes);
      const faults = await admin<{ rateLimitNext: number }>(rig, "/_emulator/faults");
      const refused = Object.values(await admin<Record<string, { refusedRate: number }>>(rig, "/_emulator/limits"));
      const notDelivered = (await store.listJobs({ limit: 100_000 })).flatMap((j) =>
        j.recipients.filter((r) => r.state !== "delivered").map((r) => `${r.state} ${r.lastError ?? ""}`),
      );
      process.stdout.write(
        `fleet-429: ${inWindow} calls from the fleet in the ${quietMs} ms of the window after its first ${settle} ms; calls again ${afterMs} ms after its end; faxed ${t.faxed} of ${BACKLOG}, lost ${t.lost.length}, duplicated ${t.duplicated.length}, not delivered ${notDelivered.length}; service: ${JSON.stringify(refused)}\n`,
      );
      // no gateway called while the window one of them met was open
      expect(inWindow).toBe(0);
      // and the fleet came back (within a few seconds, at a halved pace)
      expect(afterMs).toBeLessThan(10_000);
      // the one 429 was the only one: nothing was refused after it (a storm would be more)
      expect(faults.rateLimitNext).toBe(0);
      expect(refused.map((l) => l.refusedRate)).toEqual([0]);
      expect(t.lost).toEqual([]);
      expect(t.duplicated).toEqual([]);
      expect(notDelivered).toEqual([]);
    } finally {
      await store.close();
    }
  }, 600_000);
});
