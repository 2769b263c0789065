// A large queue made quickly, for the claim-plan test and bench/large-queue.ts: `finished` jobs
// already delivered and `waiting` jobs queued (one recipient each, every number its own), written
// by the database itself (generate_series / a recursive CTE) rather than through enqueue, which
// would take hours for a million. Then ANALYZE, so the planners see the table as it is.
import Database from "better-sqlite3";
import pg from "pg";

export interface LargeQueue {
  finished: number;
  waiting: number;
}

const JOB_COLUMNS = `id, source, "user", state, cover, documents, tags, meta, created_at, updated_at, finished_at`;
const RECIPIENT_COLUMNS = "job_id, idx, number, state, budget_from, created_at, updated_at, finished_at";

/** Fills the PostgreSQL queue at `url` (its schema already made by a store's open). */
export async function fillPostgres(url: string, q: LargeQueue): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const ts = `to_char(timestamp '2026-01-01' + g * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
    const id = (p: string) => `'${p}' || lpad(g::text, 8, '0')`;
    for (const [p, state, rstate, n, num] of [
      ["F", "delivered", "delivered", q.finished, "'+1555' || lpad((g % 9000000)::text, 7, '0')"],
      ["W", "queued", "queued", q.waiting, "'+1666' || lpad(g::text, 7, '0')"],
    ] as const) {
      if (n === 0) continue;
      const done = state === "delivered" ? ts : "NULL";
      await c.query(
        `INSERT INTO jobs (${JOB_COLUMNS}) SELECT ${id(p)}, 'smtp', 'u' || (g % 50), '${state}', '{"enabled":false}', '[]', '[]', '{}', ${ts}, ${ts}, ${done} FROM generate_series(1, $1::int) g`,
        [n],
      );
      await c.query(
        `INSERT INTO recipients (${RECIPIENT_COLUMNS}) SELECT ${id(p)}, 0, ${num}, '${rstate}', ${ts}, ${ts}, ${ts}, ${done} FROM generate_series(1, $1::int) g`,
        [n],
      );
    }
    await c.query("ANALYZE jobs");
    await c.query("ANALYZE recipients");
  } finally {
    await c.end();
  }
}

/** Fills the SQLite queue in `file` (no store may have it open: this writes beside none). */
export function fillSqlite(file: string, q: LargeQueue): void {
  const db = new Database(file);
  try {
    const ts = "strftime('%Y-%m-%dT%H:%M:%fZ', 1767225600 + n, 'unixepoch')";
    const id = (p: string) => `'${p}' || printf('%08d', n)`;
    const series = "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?)";
    db.transaction(() => {
      for (const [p, state, n, num] of [
        ["F", "delivered", q.finished, "'+1555' || printf('%07d', n % 9000000)"],
        ["W", "queued", q.waiting, "'+1666' || printf('%07d', n)"],
      ] as const) {
        if (n === 0) continue;
        const done = state === "delivered" ? ts : "NULL";
        db.prepare(
          `INSERT INTO jobs (${JOB_COLUMNS}) ${series} SELECT ${id(p)}, 'smtp', 'u' || (n % 50), '${state}', '{"enabled":false}', '[]', '[]', '{}', ${ts}, ${ts}, ${done} FROM s`,
        ).run(n);
        db.prepare(
          `INSERT INTO recipients (${RECIPIENT_COLUMNS}) ${series} SELECT ${id(p)}, 0, ${num}, '${state}', ${ts}, ${ts}, ${ts}, ${done} FROM s`,
        ).run(n);
      }
    })();
    db.exec("ANALYZE");
  } finally {
    db.close();
  }
}

/**
 * `n` more waiting jobs to one number (+17770000000), older than every other waiting row, and one
 * more to it in flight (a send under a lease): a long queue to a busy number (issue 54).
 */
export const BUSY_NUMBER = "+17770000000";
const busyRows = (series: string, ts: string, id: string, from: string) => [
  `INSERT INTO jobs (${JOB_COLUMNS.replace(", finished_at", "")}) ${series} SELECT ${id}, 'smtp', 'u1', CASE n WHEN 0 THEN 'active' ELSE 'queued' END, '{"enabled":false}', '[]', '[]', '{}', ${ts}, ${ts} FROM ${from}`,
  `INSERT INTO recipients (job_id, idx, number, state, budget_from, created_at, updated_at, locked_by, locked_until, send_id) ${series} SELECT ${id}, 0, '${BUSY_NUMBER}', CASE n WHEN 0 THEN 'sending' ELSE 'queued' END, ${ts}, ${ts}, ${ts}, CASE n WHEN 0 THEN 'elsewhere' END, CASE n WHEN 0 THEN '9999-12-31T00:00:00.000Z' END, CASE n WHEN 0 THEN 'send-busy' END FROM ${from}`,
];

/** Adds the busy number's queue to SQLite's `file` (see BUSY_NUMBER). */
export function addBusySqlite(file: string, n: number): void {
  const db = new Database(file);
  try {
    const series = "WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < ?)";
    const ts = "strftime('%Y-%m-%dT%H:%M:%fZ', 1700000000 + n, 'unixepoch')";
    db.transaction(() => {
      for (const sql of busyRows(series, ts, "'B' || printf('%08d', n)", "s")) db.prepare(sql).run(n);
    })();
    db.exec("ANALYZE");
  } finally {
    db.close();
  }
}

/** Adds the busy number's queue to the PostgreSQL queue at `url` (see BUSY_NUMBER). */
export async function addBusyPostgres(url: string, n: number): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const ts = `to_char(timestamp '2023-11-14' + n * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
    for (const sql of busyRows("", ts, "'B' || lpad(n::text, 8, '0')", "generate_series(0, $1::int) n"))
      await c.query(sql, [n]);
    await c.query("ANALYZE jobs");
    await c.query("ANALYZE recipients");
  } finally {
    await c.end();
  }
}
