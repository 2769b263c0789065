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
import { ANY_EXPIRED, DUE } from "../../src/store/sql/leases.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { fillPostgres, fillSqlite } from "../helpers/large-queue.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";
import { usePgCluster } from "../helpers/store-backends.js";

const SIZE = { finished: 30_000, waiting: 3_000 };
const text = DUE as { sqlite: string; postgres: string };
const args = () => {
  const now = new Date().toISOString();
  return [now, now, 1, 80];
};

const postgres = usePgCluster("the claim's PostgreSQL plan");

let dir = "";
beforeAll(() => {
  dir = tempFolder("claim-plan");
});
afterAll(() => removeFolder(dir));

describe("the claim's plan with many finished jobs", () => {
  it("SQLite reads recipients_claimable in order and sorts only the ties", async () => {
    const data = path.join(dir, "sqlite");
    await SqliteStore.open({ dataDir: data }).close();
    fillSqlite(path.join(data, "faxgate.db"), SIZE);
    const db = new Database(path.join(data, "faxgate.db"), { readonly: true });
    try {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${text.sqlite}`).all(...args()) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join("\n");
      expect(plan).toMatch(/SCAN r USING INDEX recipients_claimable/);
      // the order comes from the index: no sort of every waiting row, only of the tie-breakers
      expect(plan).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
      const rows = db.prepare(text.sqlite).all(...args()) as Array<{ job_id: string }>;
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

  it.skipIf(postgres.missing)(
    "PostgreSQL reads recipients_claimable and stops at the LIMIT",
    async () => {
      const url = await postgres.database();
      await (await PgStore.open({ url, dataDir: path.join(dir, "pg") })).close();
      await fillPostgres(url, SIZE);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const r = await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${toNumbered(text.postgres)}`, args());
        const plan = JSON.stringify(r.rows[0]["QUERY PLAN"]);
        expect(plan).toMatch(/"Index Name":"recipients_claimable"/);
        expect(plan).toMatch(/"Index Name":"recipients_in_flight"/);
        // the index scan stopped near the LIMIT: it did not read all 3,000 waiting rows
        const scans = [...plan.matchAll(/"Index Name":"recipients_claimable"[^}]*?"Actual Rows":(\d+)/g)].map((m) =>
          Number(m[1]),
        );
        expect(scans.length).toBe(1);
        expect(scans[0]).toBeLessThan(200);
      } finally {
        await c.end();
      }
    },
    120_000,
  );
});
