// Legal holds against the retention rule on both stores: what a hold covers (a job, a user, a
// number, a matter tag, a received fax) survives however old, what no hold covers goes, a released
// hold lets its items go at the next pass, and holds added while purges run on another gateway are
// never passed over (the choice and the deletes in one transaction that sees the holds).
import { describe, expect, it } from "vitest";
import { type RetentionConfig, retentionSchema } from "../../src/config/retention.js";
import type { FaxApi } from "../../src/fax/index.js";
import { silentLogger } from "../../src/log/index.js";
import { LegalHolds } from "../../src/retention/legal-holds.js";
import { Retention } from "../../src/retention/retention.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { manualClock } from "../helpers/store.js";
import { type BackendName, usePgCluster } from "../helpers/store-backends.js";
import { testLedger } from "../helpers/ledger.js";
import { finishedJob, receivedFax } from "./fixtures.js";

const postgres = usePgCluster("retention holds on PostgreSQL");

const DAY = 86_400_000;
// the service copies stay: these tests are about the local decision (retention.test.ts: the service)
const RULE: RetentionConfig = retentionSchema.parse({ sent: "30d", received: "90d", service: "forever" });
const noService = (): FaxApi => {
  throw new Error("no service copy is due in these tests");
};

describe.each(["sqlite", "postgres"] as BackendName[])("legal holds and the retention rule on %s", (backend) => {
  const clock = manualClock();
  const parts = (store: QueueStore, ledger = testLedger(store)) => ({
    ledger,
    holds: new LegalHolds({ store, ledger }),
    retention: new Retention({
      store,
      ledger,
      retention: () => RULE,
      clientFor: noService,
      outboxDir: () => null,
      clock,
      logger: silentLogger(),
    }),
  });

  it.skipIf(postgres.skips(backend))(
    "held items survive however old; the rest go with a ledger row each; a release lets them go",
    async () => {
      clock.set(Date.parse("2026-01-01T00:00:00Z"));
      const t = await postgres.open(backend, { clock });
      const { store, dir } = t;
      const { ledger, holds, retention } = parts(store);
      const byJob = await finishedJob(store, dir, "m-job");
      const byUser = await finishedJob(store, dir, "m-user", { user: "carol" });
      const byNumber = await finishedJob(store, dir, "m-number", { number: "+15557770001" });
      const byMatter = await finishedJob(store, dir, "m-matter", { tags: ["smith-v-jones"] });
      const free = await finishedJob(store, dir, "m-free");
      const heldFax = await receivedFax(store, "r-held", clock.now(), { sender: "+15558880001" });
      const freeFax = await receivedFax(store, "r-free", clock.now());

      const jobHold = await holds.add({ kind: "job", value: byJob, reason: "case 1", by: "ops", door: "cli" });
      await holds.add({ kind: "user", value: "carol", reason: "case 2", by: "ops", door: "cli" });
      await holds.add({ kind: "number", value: "+1 (555) 777-0001", reason: "case 3", by: "ops", door: "cli" });
      await holds.add({ kind: "matter", value: "smith-v-jones", reason: "case 4", by: "ops", door: "cli" });
      await holds.add({ kind: "number", value: "+15558880001", reason: "case 5", by: "ops", door: "cli" });
      expect((await ledger.rows()).filter((e) => e.action === "held")).toHaveLength(5);
      // a number is in a row only as the ledger keeps numbers (its keyed hash), never in the detail
      expect(JSON.stringify((await ledger.rows()).map((e) => e.detail))).not.toContain("5557770001");

      // not yet due: nothing goes
      clock.advance(29 * DAY);
      expect((await retention.pass()).purged).toBe(0);

      clock.advance(2 * DAY);
      expect((await retention.pass()).purged).toBe(1); // only the free job (sent: 30d)
      expect(await store.getJob(free)).toBeNull();
      for (const id of [byJob, byUser, byNumber, byMatter]) expect(await store.getJob(id)).not.toBeNull();

      clock.advance(400 * DAY);
      expect((await retention.pass()).purged).toBe(1); // the free received fax (received: 90d)
      expect(await store.getReceived(freeFax)).toBeNull();
      expect(await store.getReceived(heldFax)).not.toBeNull();
      for (const id of [byJob, byUser, byNumber, byMatter]) expect(await store.getJob(id)).not.toBeNull();

      const purged = (await ledger.rows()).filter((e) => e.action === "purged");
      expect(purged.map((e) => [e.object.kind, e.object.id])).toEqual([
        ["job", free],
        ["received", freeFax],
      ]);

      await holds.release(jobHold.id, { by: "ops", reason: "matter closed", door: "cli" });
      expect((await ledger.rows()).at(-1)).toMatchObject({
        action: "hold-released",
        object: { kind: "hold", id: jobHold.id },
        detail: { reason: "matter closed" },
      });
      await expect(holds.release(jobHold.id, { by: "ops", reason: " ", door: "cli" })).rejects.toMatchObject({
        code: "API_INVALID_INPUT",
      });
      await expect(
        holds.release(jobHold.id, { by: "ops", reason: "matter closed", door: "cli" }),
      ).rejects.toMatchObject({ code: "HOLD_NOT_FOUND" });
      expect((await retention.pass()).purged).toBe(1);
      expect(await store.getJob(byJob)).toBeNull();
      expect((await holds.list()).map((h) => h.kind).sort()).toEqual(["matter", "number", "number", "user"]);
      expect(await holds.list(true)).toHaveLength(5);
    },
    60_000,
  );

  it.skipIf(postgres.skips(backend))(
    "holds added by another gateway while this one purges: an item is purged only before its hold",
    async () => {
      clock.set(Date.parse("2026-01-01T00:00:00Z"));
      const t = await postgres.open(backend, { clock });
      const { store, dir } = t;
      const ledger = testLedger(store);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(await finishedJob(store, dir, `m-race-${i}`, { user: `u${i}` }));
      clock.advance(31 * DAY);
      // PostgreSQL: another gateway on the same queue. SQLite: one daemon owns the file (the CLI's
      // hold goes through the same lock, BEGIN IMMEDIATE), so the same store from two callers.
      const other = backend === "postgres" ? await t.reopen({ clock }) : store;
      const mine = parts(store, ledger);
      const theirs = parts(other, ledger);
      // holds one after another on the other gateway, purge passes on this one, at once
      await Promise.all([
        (async () => {
          for (const id of ids)
            await theirs.holds.add({ kind: "job", value: id, reason: "race", by: "ops", door: "cli" });
        })(),
        (async () => {
          for (let i = 0; i < 4; i++) await mine.retention.pass();
        })(),
      ]);
      // the ledger's order is the transactions' commit order (each row is written inside its own)
      for (const id of ids) {
        const held = (await ledger.rows()).findIndex((e) => e.action === "held" && e.detail.value === id);
        const purged = (await ledger.rows()).findIndex((e) => e.action === "purged" && e.object.id === id);
        const exists = (await store.getJob(id)) !== null;
        if (purged >= 0) {
          expect(purged).toBeLessThan(held);
          expect(exists).toBe(false);
        } else expect(exists).toBe(true);
      }
      // two writers at once, one chain: every hold and purge row in it, unbroken
      expect((await ledger.verify()).broken).toBeNull();
    },
    60_000,
  );
});
