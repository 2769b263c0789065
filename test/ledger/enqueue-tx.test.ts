// The intake's "sent" rows commit with the job (issue 56): on both stores a job taken in has its
// rows in the same transaction, so neither stands without the other. Many jobs at once (SQLite's
// intake thread commits them in groups) interleaved with rows the main connection appends keep
// one unbroken chain; a ledger append that fails (a real trigger in the test database refusing
// it) takes the job with it; a duplicate delivery adds no row.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { acceptJob } from "../../src/intake/accept.js";
import { QueuePressure } from "../../src/intake/queue-pressure.js";
import { SqlLedger } from "../../src/ledger/ledger.js";
import { silentLogger } from "../../src/log/logger.js";
import { type BackendName, type BackendStore, openBackend, usePgCluster } from "../helpers/store-backends.js";
import { newJob } from "../helpers/store.js";

const KEY = Buffer.from("k".repeat(40));
const postgres = usePgCluster("PostgreSQL half");
const backends: BackendName[] = postgres.missing === null ? ["sqlite", "postgres"] : ["sqlite"];

describe.each(backends)("the intake's ledger rows on %s", (backend) => {
  let b: BackendStore;
  let ledger: SqlLedger;
  let deps: Parameters<typeof acceptJob>[0];
  beforeAll(async () => {
    b = await openBackend(backend, postgres.cluster);
    ledger = new SqlLedger(b.store.sql, KEY);
    deps = {
      store: b.store,
      ledger,
      log: silentLogger(),
      pressure: new QueuePressure(b.store, 100_000, systemClock),
    };
  }, 120_000);
  afterAll(async () => {
    await b?.cleanup();
  });

  const jobsOf = async (user: string): Promise<number> =>
    Number(
      (await b.store.sql.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM jobs WHERE "user" = ?`, [user]))!.n,
    );

  it("writes one sent row per recipient with the job, and the chain holds under a burst", async () => {
    const twoNumbers = [{ number: "+15551230001" }, { number: "+15551230002" }];
    const accepted = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 3 === 0
          ? ledger
              .record({
                action: "viewed",
                actor: { kind: "operator", id: "op" },
                object: { kind: "job", id: `V${i}` },
                door: "console",
              })
              .then(() => null)
          : acceptJob(deps, newJob(b.dir, { recipients: twoNumbers })).then((a) => a.job),
      ),
    );
    const jobs = accepted.filter((j) => j !== null);
    expect(jobs).toHaveLength(20);
    const sent = await ledger.rows({ user: "alice" });
    for (const job of jobs) {
      const mine = sent.filter((r) => r.object.id.startsWith(`${job.id}#`));
      expect(mine.map((r) => r.object.id).sort()).toEqual([`${job.id}#0`, `${job.id}#1`]);
      expect(mine.every((r) => r.action === "sent" && r.door === "cli" && r.numberHash !== null)).toBe(true);
    }
    const v = await ledger.verify();
    expect(v.broken).toBeNull();
    expect(v.rows).toBe(20 * 2 + 10);
    expect(JSON.stringify(sent)).not.toContain("5551230001");
  });

  it("a duplicate delivery adds no row", async () => {
    const before = (await ledger.head())!.seq;
    const first = await acceptJob(deps, newJob(b.dir, { dedupeKey: "same-mail" }));
    const again = await acceptJob(deps, newJob(b.dir, { dedupeKey: "same-mail" }));
    expect(again.duplicate).toBe(true);
    expect(again.job.id).toBe(first.job.id);
    expect((await ledger.head())!.seq).toBe(before + 1);
  });

  it("a ledger append that fails takes the job with it", async () => {
    // a real constraint in the database, not a stand-in for our code: the ledger refuses mallory's rows
    if (backend === "sqlite")
      await b.store.sql.run(`CREATE TRIGGER refuse_mallory BEFORE INSERT ON ledger WHEN NEW.actor_id = 'mallory'
        BEGIN SELECT RAISE(ABORT, 'the test refuses this ledger row'); END`);
    else {
      // PostgreSQL's append is the unsealed row (store/sql/ledger.ts): refused there
      await b.store.sql.run(`CREATE FUNCTION refuse_mallory() RETURNS trigger AS $$
        BEGIN IF NEW.actor_id = 'mallory' THEN RAISE EXCEPTION 'the test refuses this ledger row'; END IF; RETURN NEW; END
        $$ LANGUAGE plpgsql`);
      await b.store.sql.run(
        "CREATE TRIGGER refuse_mallory BEFORE INSERT ON ledger_pending FOR EACH ROW EXECUTE FUNCTION refuse_mallory()",
      );
    }
    const before = (await ledger.head())!.seq;
    await expect(acceptJob(deps, newJob(b.dir, { user: "mallory" }))).rejects.toThrow(/refuses this ledger row/);
    expect(await jobsOf("mallory")).toBe(0);
    // the jobs committed around it are whole, and so is the chain
    await acceptJob(deps, newJob(b.dir, { user: "bob" }));
    expect(await jobsOf("bob")).toBe(1);
    expect((await ledger.head())!.seq).toBe(before + 1);
    expect((await ledger.verify()).broken).toBeNull();
  });
});
