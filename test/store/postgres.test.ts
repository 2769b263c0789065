// What only the PostgreSQL store does: several gateways on one queue. Two stores on one database
// (two instances, each with its own pool and data folder) claim at the same time; duties pass on
// when the holder's connection dies; losing the server is a temporary error, and the store works
// again when the server is back. Real PostgreSQL, a private cluster for this file.
import { describe, expect, it } from "vitest";
import { rmSync } from "node:fs";
import pg from "pg";
import { isFaxgateError } from "../../src/errors.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { redactDatabaseUrl } from "../../src/store/postgres/connection.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { newJob } from "../helpers/store.js";
import { waitUntil, when } from "../helpers/wait.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("PostgreSQL store tests");

async function twoInstances(): Promise<{ a: QueueStore; b: QueueStore; dir: string; url: string }> {
  const t = await postgres.open("postgres");
  return { a: t.store, b: await t.reopen(), dir: t.dir, url: t.url! };
}

describe.skipIf(postgres.missing !== null)("several gateways on one PostgreSQL queue", () => {
  it("two instances claiming at the same time never claim the same recipient", async () => {
    const { a, b, dir } = await twoInstances();
    const total = 60;
    for (let i = 0; i < total; i++)
      await a.enqueue(newJob(dir, { recipients: [{ number: `+1555100${String(i).padStart(4, "0")}` }] }));
    const claimed: string[] = [];
    const sendIds = new Set<string>();
    // each instance runs three claimers at once, as a dispatcher pass with concurrency would
    const claimer = async (s: QueueStore, owner: string): Promise<void> => {
      for (;;) {
        const groups = await s.claimDue(owner, 2, 60_000);
        if (groups.length === 0) return;
        for (const g of groups) {
          sendIds.add(g.sendId);
          for (const r of g.recipients) claimed.push(`${r.jobId}/${r.idx}`);
        }
      }
    };
    await Promise.all([
      claimer(a, "a1"),
      claimer(a, "a2"),
      claimer(a, "a3"),
      claimer(b, "b1"),
      claimer(b, "b2"),
      claimer(b, "b3"),
    ]);
    expect(claimed).toHaveLength(total);
    expect(new Set(claimed).size).toBe(total);
    expect(sendIds.size).toBe(total);
    expect((await b.counts()).recipients.sending).toBe(total);
  }, 180_000);

  it("a job queued by one instance wakes the others at once (NOTIFY), and its own listeners once", async () => {
    const { a, b, dir } = await twoInstances();
    const heardByA: string[] = [];
    const heardByB: string[] = [];
    a.onEnqueued((job) => heardByA.push(job.id));
    b.onEnqueued((job) => heardByB.push(job.id));
    // each LISTENs on its duty connection; wait until both are up (a first duty check makes sure:
    // it queues behind the LISTEN on that connection). a's too, or b's NOTIFY below may come first.
    await b.holdsDuty("notify-test");
    await a.holdsDuty("notify-test-a");
    const { job } = await a.enqueue(newJob(dir, { recipients: [{ number: "+15551990001" }] }));
    await when(
      () => heardByB.includes(job.id),
      (l) => b.onEnqueued(l),
      "the other instance told of the new job",
      10_000,
    );
    const second = (await b.enqueue(newJob(dir, { recipients: [{ number: "+15551990002" }] }))).job;
    await when(
      () => heardByA.includes(second.id),
      (l) => a.onEnqueued(l),
      "the first instance told of the other's job",
      10_000,
    );
    // each heard the other's job once and its own once, not its own NOTIFY on top
    expect(heardByA.sort()).toEqual([job.id, second.id].sort());
    expect(heardByB.sort()).toEqual([job.id, second.id].sort());
  }, 60_000);

  it("one fax in flight per destination number across instances", async () => {
    const { a, b, dir } = await twoInstances();
    for (let i = 0; i < 12; i++) await a.enqueue(newJob(dir, { recipients: [{ number: "+15552000001" }] }));
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).claimDue(`o${i}`, 4, 60_000)),
      );
      const groups = results.flat();
      expect(groups).toHaveLength(1);
      const inFlight = (await a.counts()).recipients.sending;
      expect(inFlight).toBe(1);
      // finish it, so the next round may claim one more
      const g = groups[0]!;
      await a.markAccepted({ jobId: g.job.id, idx: 0 }, g.sendId, { messageId: `m${round}` });
      await b.complete({ jobId: g.job.id, idx: 0 }, { resultCode: "0" });
    }
  });

  it("each notification is claimed by one instance only", async () => {
    const { a, b } = await twoInstances();
    for (let i = 0; i < 30; i++)
      await a.enqueueNotification({
        kind: "rejected",
        user: "alice",
        dedupeKey: `n${i}`,
        payload: { jobId: `J${i}`, reason: "x" },
      });
    const got = (
      await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).claimNotifications(`w${i}`, 10, 60_000)))
    ).flat();
    expect(got).toHaveLength(30);
    expect(new Set(got.map((n) => n.id)).size).toBe(30);
  });

  it("a lease is never taken from a live instance, whatever releaseExpired is asked", async () => {
    const { a, b, dir } = await twoInstances();
    await a.enqueue(newJob(dir));
    const [g] = await a.claimDue("a", 1, 60_000);
    expect(await b.releaseExpired({ all: true })).toEqual({ unknown: 0, released: 0 });
    expect((await b.getJob(g!.job.id))!.recipients[0]!.state).toBe("sending");
  });

  it("a duty is held by one instance and moves to another when the holder's connection dies", async () => {
    const { a, b, url } = await twoInstances();
    expect(await a.holdsDuty("purge")).toBe(true);
    expect(await b.holdsDuty("purge")).toBe(false);
    expect(await b.holdsDuty("inbound")).toBe(true); // duties are independent
    expect(await a.holdsDuty("purge")).toBe(true);
    // the holder's host dies: the server ends its session
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const killed = await admin.query(
      `SELECT pg_terminate_backend(l.pid) FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objid = (hashtext('faxgate:duty:purge')::bigint & 4294967295)::oid`,
    );
    await admin.end();
    expect(killed.rows).toHaveLength(1);
    // b takes it on its next try (the server may take a moment to drop the session)
    // (the session's end is seen, not heard: b asks again)
    expect(await waitUntil(() => b.holdsDuty("purge"), "b holding the purge duty", 5000, 100)).toBe(true);
    expect(await a.holdsDuty("purge")).toBe(false); // a noticed it lost it, and does not get it back
    expect(await a.holdsDuty("purge")).toBe(false);
    // a clean stop hands it over at once
    await b.close();
    expect(await a.holdsDuty("purge")).toBe(true);
  });

  it("two instances starting on an empty database at once both come up (one migrates)", async () => {
    const url = await postgres.database();
    const dir = (await import("node:fs")).mkdtempSync(
      (await import("node:path")).join((await import("node:os")).tmpdir(), "faxgate-pgm-"),
    );
    try {
      const stores = await Promise.all([0, 1, 2].map((i) => PgStore.open({ url, dataDir: `${dir}/d${i}` })));
      await stores[0]!.setState("x", "1");
      expect(await stores[2]!.getState("x")).toBe("1");
      for (const s of stores) await s.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(postgres.missing !== null)("losing PostgreSQL", () => {
  it("calls fail as STORE_UNAVAILABLE (temporary) while the server is down, and work again when it is back", async () => {
    const { a, b, dir } = await twoInstances();
    const { job } = await a.enqueue(newJob(dir));
    expect(await a.holdsDuty("purge")).toBe(true);
    postgres.cluster!.stop();
    try {
      for (const call of [
        () => a.enqueue(newJob(dir)),
        () => a.getJob(job.id),
        () => b.claimDue("b", 1, 60_000),
        () => a.counts(),
      ]) {
        try {
          await call();
          throw new Error("expected a failure");
        } catch (err) {
          expect(isFaxgateError(err, "STORE_UNAVAILABLE")).toBe(true);
          expect((err as { temporary: boolean }).temporary).toBe(true);
        }
      }
      expect(await a.holdsDuty("purge")).toBe(false); // the lock went with the server
    } finally {
      postgres.cluster!.start();
    }
    expect((await a.getJob(job.id))!.state).toBe("queued");
    expect((await b.enqueue(newJob(dir, { recipients: [{ number: "+15553000002" }] }))).duplicate).toBe(false);
    expect(await b.claimDue("b", 5, 60_000)).toHaveLength(2);
    expect(await a.holdsDuty("purge")).toBe(true);
  });

  it("a connection cut in the middle of a transaction fails that call as STORE_UNAVAILABLE, nothing half-stored, no crash", async () => {
    const { a, dir, url } = await twoInstances();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // hold the dedupe key's lock, so the enqueue waits inside its transaction
      await admin.query("SELECT pg_advisory_lock(hashtext($1))", ["faxgate:dedupe:cut-key"]);
      const pending = a.enqueue(newJob(dir, { dedupeKey: "cut-key" })).then(
        () => null,
        (err: unknown) => err,
      );
      // the enqueue's wait is seen in pg_stat_activity, not heard
      const pid = await waitUntil(
        async () =>
          (
            await admin.query<{ pid: number }>(
              `SELECT pid FROM pg_stat_activity WHERE wait_event = 'advisory' AND pid <> pg_backend_pid()`,
            )
          ).rows[0]?.pid,
        "the enqueue waiting on the dedupe lock",
        5000,
        50,
      );
      await admin.query("SELECT pg_terminate_backend($1)", [pid]);
      const err = await pending;
      expect(isFaxgateError(err, "STORE_UNAVAILABLE")).toBe(true);
      expect(await a.listJobs()).toEqual([]);
      // and the store goes on with a fresh connection
      await admin.query("SELECT pg_advisory_unlock(hashtext($1))", ["faxgate:dedupe:cut-key"]);
      expect((await a.enqueue(newJob(dir, { dedupeKey: "cut-key" }))).duplicate).toBe(false);
    } finally {
      await admin.end();
    }
  });

  it("a statement left unanswered fails the call after the query timeout instead of hanging; the store goes on", async () => {
    const t = await postgres.open("postgres");
    const url = t.url!;
    const store = await PgStore.open({ url, dataDir: `${t.dir}/qt`, queryTimeoutMs: 1000 });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // the dedupe key's lock is held elsewhere: the enqueue's statement waits, unanswered
      await admin.query("SELECT pg_advisory_lock(hashtext($1))", ["faxgate:dedupe:stuck"]);
      const err = await store.enqueue(newJob(t.dir, { dedupeKey: "stuck" })).then(
        () => null,
        (e: unknown) => e,
      );
      expect(isFaxgateError(err, "STORE_UNAVAILABLE")).toBe(true);
      // ended by the query timeout (no wall-clock bound: without it the enqueue waits for the lock
      // and the test runs out of its own time)
      expect(String((err as Error).message)).toMatch(/Query read timeout/);
      await admin.query("SELECT pg_advisory_unlock(hashtext($1))", ["faxgate:dedupe:stuck"]);
      expect(await store.listJobs()).toEqual([]);
      expect((await store.enqueue(newJob(t.dir, { dedupeKey: "stuck" }))).duplicate).toBe(false);
    } finally {
      await admin.end();
      await store.close();
    }
  });

  it("never shows the database password in errors", async () => {
    const secret = "S3cr3t-pw%21";
    const url = `postgres://faxgate:${secret}@127.0.0.1:1/faxgate`;
    expect(redactDatabaseUrl(url)).toBe("postgres://faxgate:***@127.0.0.1:1/faxgate");
    const dir = (await import("node:fs")).mkdtempSync(
      (await import("node:path")).join((await import("node:os")).tmpdir(), "faxgate-pgp-"),
    );
    try {
      await PgStore.open({ url, dataDir: dir, connectTimeoutMs: 2000 });
      throw new Error("expected a failure");
    } catch (err) {
      expect(isFaxgateError(err, "STORE_UNAVAILABLE")).toBe(true);
      const text = `${(err as Error).message} ${(err as Error).stack}`;
      expect(text).toContain("***");
      expect(text).not.toContain("S3cr3t");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
