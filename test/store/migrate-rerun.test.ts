// `faxgate store migrate` run again into a PostgreSQL a fleet already writes (docs/ha.md): a
// received fax the fleet fetched itself under another id takes the SQLite copy's text and
// timeline (its connector deliveries are left out, counted), and events added on either side
// since the last run are copied once, never twice, whatever the fleet added meanwhile. A legal
// hold on the old copy is named for placing again on the fleet's.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { migrateSqliteToPostgres } from "../../src/store/postgres/migrate-sqlite.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { listDeliveries, queueDeliveries } from "../../src/store/sql/deliveries.js";
import { claimText, getReceivedText, textRead } from "../../src/store/sql/received-text.js";
import { addHold } from "../../src/store/sql/retention.js";
import { runCli } from "../helpers/cli.js";
import { newJob, receivedInput } from "../helpers/store.js";
import { openBackend, usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("store migrate rerun tests");

// the same service record on both sides: the fleet's copy is found by it
const incoming = (messageId: string, withText: boolean) =>
  receivedInput({
    messageId,
    receivedAt: "2026-11-20T10:00:00.000Z",
    detail: "webhook",
    ...(withText ? { readText: { waitsUntil: null } } : {}),
  });

const zeroes = (counts: Record<string, number>) => Object.fromEntries(Object.keys(counts).map((k) => [k, 0]));

describe.skipIf(postgres.missing !== null)("faxgate store migrate, run again", () => {
  it("joins a received fax the fleet holds under another id: its text and events, not its deliveries", async () => {
    const src = await openBackend("sqlite", null);
    try {
      const s = src.store;
      const { fax } = await s.keepReceived(incoming("svc-both", true));
      const claimed = (await claimText(s.sql, { leaseMs: 60_000, pick: (u) => u[0]! }))!;
      await textRead(s.sql, claimed.faxId, { body: "Referral for Maria Alvarez", pdf: null, pages: 1 });
      await s.changeReceived(fax.id, {
        set: { state: "taken", owner: "alice", note: "calling back" },
        event: { action: "taken", actor: "alice", detail: null },
      });
      await queueDeliveries(s.sql, [
        { faxId: fax.id, target: "fhir:ehr", kind: "fhir", rule: "referrals", owner: "alice", spec: { base: "x" } },
      ]);
      await addHold(
        s.sql,
        { kind: "received", value: fax.id, reason: "subpoena 24-117", by: "ops" },
        async () => undefined,
      );
      const oldEvents = await s.listReceivedEvents(fax.id);

      // a gateway already on PostgreSQL fetched the same fax from the service (no OCR there)
      const url = await postgres.database();
      const fleet = await PgStore.open({ url, dataDir: path.join(src.dir, "pg-data") });
      try {
        const theirs = (await fleet.keepReceived(incoming("svc-both", false))).fax;
        expect(theirs.id).not.toBe(fax.id);
        const fleetEvents = await fleet.listReceivedEvents(theirs.id);

        const dataDir = path.join(src.dir, "data");
        const report = await migrateSqliteToPostgres({ dataDir, url });
        expect(report.receivedUnderOtherId).toBe(1);
        expect(report.skipped).toEqual({ deliveries: 1 });
        expect(report.holdAgain).toEqual([{ heldId: fax.id, fleetId: theirs.id }]);
        expect(report.copied).toMatchObject({ receivedFaxes: 0, receivedText: 1, deliveries: 0 });
        expect(report.copied.receivedEvents).toBe(oldEvents.length);
        // one fax, under the fleet's id, with the SQLite copy's text and both timelines
        expect((await fleet.listReceived()).map((f) => f.id)).toEqual([theirs.id]);
        expect(await getReceivedText(fleet.sql, theirs.id)).toMatchObject({
          faxId: theirs.id,
          state: "done",
          body: "Referral for Maria Alvarez",
        });
        const joined = await fleet.listReceivedEvents(theirs.id);
        expect(joined).toHaveLength(fleetEvents.length + oldEvents.length);
        expect(joined).toEqual(expect.arrayContaining(oldEvents));
        expect(await listDeliveries(fleet.sql)).toEqual([]);

        // and again: nothing twice
        const again = await migrateSqliteToPostgres({ dataDir, url });
        expect(again.copied).toEqual(zeroes(again.copied));
        expect(again.receivedUnderOtherId).toBe(1);
        expect(again.skipped).toEqual({ deliveries: 1 });
        expect(await fleet.listReceivedEvents(theirs.id)).toHaveLength(joined.length);

        // the CLI says what was joined, left out, and which hold to place again
        await s.close();
        const cfg = path.join(src.dir, "faxgate.yaml");
        writeFileSync(cfg, `api: {baseUrl: sandbox}\ndata: ./data\nusers: []\n`);
        const r = await runCli(["store", "migrate", "--to", url, "--config", cfg]);
        expect(r.code).toBe(0);
        expect(r.stdout).toContain(
          "joined: 1 received faxes PostgreSQL held under another id took their texts and events; 1 of their connector deliveries left out",
        );
        expect(r.stdout).toContain(
          `hold again: received fax ${fax.id} is held here but the fleet keeps it as ${theirs.id}: faxgate legal-hold add --received ${theirs.id}`,
        );
      } finally {
        await fleet.close();
      }
    } finally {
      await src.cleanup();
    }
  });

  it("copies the events added since to jobs and faxes copied before, once, beside the fleet's own", async () => {
    const src = await openBackend("sqlite", null);
    try {
      const s = src.store;
      const { job } = await s.enqueue(newJob(src.dir, { recipients: [{ number: "+15550000200" }] }));
      const other = (await s.enqueue(newJob(src.dir, { recipients: [{ number: "+15550000201" }] }))).job;
      const { fax } = await s.keepReceived(incoming("svc-later", false));
      const dataDir = path.join(src.dir, "data");
      const url = await postgres.database();
      const first = await migrateSqliteToPostgres({ dataDir, url });
      expect(first.copied.jobs).toBe(2);

      const fleet = await PgStore.open({ url, dataDir: path.join(src.dir, "pg-data") });
      try {
        // the fleet works one job on (an event of its own), the old gateway both, and the fax
        await fleet.operate(other.id, "cancel", "ops");
        await s.operate(job.id, "hold", "ops");
        await s.operate(other.id, "hold", "ops");
        await s.changeReceived(fax.id, {
          set: { state: "taken", owner: "alice" },
          event: { action: "taken", actor: "alice", detail: null },
        });
        const fleetOwn = await fleet.listEvents(other.id);

        const again = await migrateSqliteToPostgres({ dataDir, url });
        expect(again.alreadyThere).toBe(2);
        expect(again.copied).toMatchObject({ jobs: 0, events: 2, receivedFaxes: 0, receivedEvents: 1 });
        expect(await fleet.listEvents(job.id)).toEqual(await s.listEvents(job.id));
        const both = await fleet.listEvents(other.id);
        expect(both).toHaveLength(fleetOwn.length + 1);
        expect(both).toEqual(expect.arrayContaining([...(await s.listEvents(other.id)), ...fleetOwn]));
        const faxEvents = await s.listReceivedEvents(fax.id);
        expect(await fleet.listReceivedEvents(fax.id)).toEqual(faxEvents);

        // a third run finds nothing new
        const third = await migrateSqliteToPostgres({ dataDir, url });
        expect(third.copied).toEqual(zeroes(third.copied));
        expect(await fleet.listEvents(other.id)).toHaveLength(both.length);
        expect(await fleet.listReceivedEvents(fax.id)).toHaveLength(faxEvents.length);
      } finally {
        await fleet.close();
      }
    } finally {
      await src.cleanup();
    }
  });
});
