// The claim's plan in a large queue (issue 55): with many finished jobs and thousands waiting, the
// dispatcher's candidate query (sql/leases.ts, DUE) reads the partial index recipients_claimable
// in send order and stops at its LIMIT, on both backends, and counts the numbers in flight from
// recipients_in_flight on PostgreSQL. Plans, not timings: a plan that sorts every waiting row
// fails here on a quiet machine and a busy one alike. Timings are bench/large-queue.bench.ts's.
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { toNumbered } from "../../src/store/sql/db.js";
import type { Db, Sql } from "../../src/store/sql/db.js";
import { ANY_EXPIRED, DUE, dueCandidates } from "../../src/store/sql/leases.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { addBusyPostgres, addBusySqlite, BUSY_NUMBER, fillPostgres, fillSqlite } from "../helpers/large-queue.js";
import { pgAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";

const SIZE = { finished: 30_000, waiting: 3_000 };
const text = DUE as { sqlite: string; postgres: string };
// DUE's arguments: now, the schedule horizon, on SQLite the window's ceiling (none here), the
// per-number limit, how many wanted; PostgreSQL reads the ceiling itself from now and the
// window's last offset, given first
const args = (d: "sqlite" | "postgres") => {
  const now = new Date().toISOString();
  return d === "sqlite" ? [now, now, null, 1, 80] : [now, 319, now, now, 1, 80];
};

const pgMissing = pgAvailable();
if (pgMissing) console.warn(`the claim's PostgreSQL plan skipped: ${pgMissing}`);

let dir = "";
let cluster: PgCluster | undefined;
beforeAll(async () => {
  dir = tempFolder("claim-plan");
  if (!pgMissing) cluster = await startPgCluster();
}, 120_000);
afterAll(() => {
  cluster?.destroy();
  removeFolder(dir);
});

describe("the claim's plan with many finished jobs", () => {
  it("SQLite reads recipients_claimable in order and sorts only the ties", async () => {
    const data = path.join(dir, "sqlite");
    await SqliteStore.open({ dataDir: data }).close();
    fillSqlite(path.join(data, "faxgate.db"), SIZE);
    const db = new Database(path.join(data, "faxgate.db"), { readonly: true });
    try {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${text.sqlite}`).all(...args("sqlite")) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join("\n");
      expect(plan).toMatch(/SEARCH r USING INDEX recipients_claimable/);
      // the order comes from the index: no sort of every waiting row, only of the tie-breakers
      expect(plan).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
      const rows = db.prepare(text.sqlite).all(...args("sqlite")) as Array<{ job_id: string }>;
      expect(rows.length).toBe(80);
      expect(rows[0]!.job_id).toBe("W00000001");
      // every pass first asks whether a lease ran out: through the state indexes, not a read of
      // every finished row (it scanned both tables before: 89 ms a pass at 200,000 finished)
      const now = new Date().toISOString();
      const expiry = (db.prepare(`EXPLAIN QUERY PLAN ${ANY_EXPIRED}`).all(now, now) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join("\n");
      expect(expiry).toMatch(/SEARCH recipients USING INDEX/);
      expect(expiry).toMatch(/SEARCH notifications USING INDEX/);
      expect(expiry).not.toMatch(/SCAN (recipients|notifications)/);
    } finally {
      db.close();
    }
  }, 60_000);

  it.skipIf(pgMissing)(
    "PostgreSQL reads recipients_claimable and stops at the LIMIT",
    async () => {
      const url = await cluster!.createDatabase();
      await (await PgStore.open({ url, dataDir: path.join(dir, "pg") })).close();
      await fillPostgres(url, SIZE);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const r = await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${toNumbered(text.postgres)}`, args("postgres"));
        const plan = JSON.stringify(r.rows[0]["QUERY PLAN"]);
        expect(plan).toMatch(/"Index Name":"recipients_claimable"/);
        expect(plan).toMatch(/"Index Name":"recipients_in_flight"/);
        // the index scans stopped near the LIMIT and the window: they did not read all 3,000 waiting rows
        const scans = [...plan.matchAll(/"Index Name":"recipients_claimable"[^}]*?"Actual Rows":(\d+)/g)].map((m) =>
          Number(m[1]),
        );
        expect(scans.length).toBe(2);
        for (const n of scans) expect(n).toBeLessThan(400);
      } finally {
        await c.end();
      }
    },
    120_000,
  );
});

// Issue 54: a long queue to one number at its limit, older than everything else waiting. A pass
// used to read every row of it to find the others' faxes; now it reads a bounded window, then
// each waiting number once. The rows read are counted (no timing): on SQLite by a function each
// row the claim's queries look at passes through, on PostgreSQL from EXPLAIN ANALYZE's row counts.
const BUSY = 3_000;
const FEW = { finished: 2_000, waiting: 20 };
const WANTED = 64;
type Candidate = { job_id: string; idx: number; number: string };

/** The candidates of one claim pass, through the claim's own code, over a Db that counts rows. */
async function pass(
  dialect: "sqlite" | "postgres",
  all: (sql: Sql, args: readonly unknown[]) => Promise<unknown[]>,
): Promise<Candidate[]> {
  const now = new Date().toISOString();
  const get = async (sql: Sql, args: readonly unknown[]) => (await all(sql, args))[0];
  return dueCandidates({ dialect, all, get } as unknown as Db, now, now, 1, WANTED);
}

function expectOthersFound(found: Candidate[]): void {
  // every other number's fax is a candidate in this pass, oldest first, and none of the busy one's
  expect(found.map((r) => r.job_id)).toEqual(
    Array.from({ length: FEW.waiting }, (_, i) => `W${String(i + 1).padStart(8, "0")}`),
  );
  expect(found.some((r) => r.number === BUSY_NUMBER)).toBe(false);
}

describe("a pass with a long queue to one busy number", () => {
  it("SQLite reads a window and each waiting number, not the busy number's queue", async () => {
    const data = path.join(dir, "sqlite-busy");
    await SqliteStore.open({ dataDir: data }).close();
    fillSqlite(path.join(data, "faxgate.db"), FEW);
    addBusySqlite(path.join(data, "faxgate.db"), BUSY);
    const db = new Database(path.join(data, "faxgate.db"));
    let read = 0;
    db.function("counted", { deterministic: false }, () => {
      read++;
      return 1;
    });
    try {
      // each look at a recipients row of a waiting state goes through counted()
      const counting = (sql: string) =>
        sql.replace(/\b((?:\w+\.)?state IN \('queued', ?'deferred'\))/g, "counted() AND $1");
      const found = await pass("sqlite", async (sql, a) =>
        db.prepare(counting((sql as { sqlite: string }).sqlite)).all(...a),
      );
      expect(counting(text.sqlite)).toContain("counted()");
      expectOthersFound(found as Candidate[]);
      // a window of 4 x 64 rows, twice (its edge, then its rows), and a few rows per number
      expect(read).toBeGreaterThan(0);
      expect(read).toBeLessThan(8 * WANTED + 5 * (FEW.waiting + 1));
    } finally {
      db.close();
    }
  }, 60_000);

  it.skipIf(pgMissing)(
    "PostgreSQL reads a window and each waiting number, not the busy number's queue",
    async () => {
      const url = await cluster!.createDatabase();
      await (await PgStore.open({ url, dataDir: path.join(dir, "pg-busy") })).close();
      await fillPostgres(url, FEW);
      await addBusyPostgres(url, BUSY);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      let read = 0;
      // rows the plan's nodes on recipients gave, each loop counted
      const count = (node: Record<string, unknown>): number =>
        (node["Relation Name"] === "recipients" ? Number(node["Actual Rows"]) * Number(node["Actual Loops"]) : 0) +
        ((node.Plans as Array<Record<string, unknown>> | undefined) ?? []).reduce((n, p) => n + count(p), 0);
      try {
        const found = await pass("postgres", async (sql, a) => {
          const q = toNumbered((sql as { postgres: string }).postgres);
          const plan = await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${q}`, a as unknown[]);
          read += count(plan.rows[0]["QUERY PLAN"][0].Plan);
          return (await c.query(q, a as unknown[])).rows;
        });
        expectOthersFound(found);
        expect(read).toBeGreaterThan(0);
        expect(read).toBeLessThan(8 * WANTED + 5 * (FEW.waiting + 1));
      } finally {
        await c.end();
      }
    },
    120_000,
  );
});
