// `faxgate store migrate`'s part for every durable table beyond the jobs, notifications, state keys
// and compliance records (migrate-sqlite.ts, migrate-ledger.ts): one copier driven by the schema
// definition (sql/schema.ts), so a column added there is copied without a line here. Values go as
// SQLite holds them (integers, JSON text, timestamps as text; blobs as bytea); serial keys are
// PostgreSQL's to hand out, and generated columns (the stored search words) are not in the
// definition's columns, so PostgreSQL computes them. Each row is inserted ON CONFLICT DO NOTHING on
// its table's keys: a rerun adds what is missing, nothing twice. A received fax PostgreSQL holds
// under another id (the same service fax id) is joined, not copied: its rows follow CopiedTable.fax. Every table of the definition is
// either copied (COPIED_TABLES, in foreign-key order, or by hand: COPIED_BY_HAND) or listed in
// NOT_COPIED with its reason; test/store/migrate-coverage.test.ts holds the three to the definition.
import type Database from "better-sqlite3";
import type pg from "pg";
import { FaxgateError } from "../../errors.js";
import { TABLES, tableName } from "../sql/schema.js";

/** Copied by migrate-sqlite.ts / migrate-ledger.ts (jobs' documents need their files read). */
export const COPIED_BY_HAND = [
  "jobs",
  "recipients",
  "documents",
  "job_events",
  "notifications",
  "kv",
  "ledger",
  "legal_holds",
] as const;

export interface CopiedTable {
  /** PostgreSQL's name (the same on SQLite for each of these) */
  table: string;
  /** its field in the report's counts, and how the CLI names it */
  count: string;
  label: string;
  /** the columns a row is known by in PostgreSQL (what verify counts over) */
  key: string[];
  /**
   * rows with no key of their own, copied with their parent's row; for a parent PostgreSQL has
   * already, those it lacks (a row is known by all its columns: missingRows)
   */
  children?: Array<{ table: string; count: string; label: string; parentKey: string; parentColumn: string }>;
  /**
   * a column naming a received fax: when PostgreSQL holds that fax under another id (a gateway
   * already on it fetched the same fax), "map" copies the row to that id, "skip" leaves it out
   * and counts it (MigrateReport.skipped); docs/ha.md says why per table
   */
  fax?: { column: string; ofOtherId: "map" | "skip" };
}

/** The generic copier's tables, parents before the rows that reference them. */
export const COPIED_TABLES: readonly CopiedTable[] = [
  {
    table: "received_faxes",
    count: "receivedFaxes",
    label: "received faxes (with their documents)",
    // the service's messageId: a fax a gateway already kept from the service is not kept twice
    key: ["message_id"],
    // their timelines, reply links included (the job's side is a job event)
    children: [
      {
        table: "received_events",
        count: "receivedEvents",
        label: "received fax events",
        parentKey: "id",
        parentColumn: "fax_id",
      },
    ],
  },
  // the same fax's text: PostgreSQL's own (the fleet read it) wins by the fax_id key
  {
    table: "received_text",
    count: "receivedText",
    label: "received fax texts",
    key: ["fax_id"],
    fax: { column: "fax_id", ofOtherId: "map" },
  },
  // the old gateway's routing of its own copy: the fleet routed its copy itself under its rules,
  // and a pending row joined to it could deliver the fax once more
  {
    table: "deliveries",
    count: "deliveries",
    label: "connector deliveries",
    key: ["id"],
    fax: { column: "fax_id", ofOtherId: "skip" },
  },
  { table: "sent_text", count: "sentText", label: "sent fax texts", key: ["job_id"] },
  { table: "signed_uses", count: "signedUses", label: "signed mail uses", key: ["message_key", "recipient"] },
  { table: "service_purges", count: "servicePurges", label: "service purges", key: ["message_id"] },
  { table: "sign_in_factors", count: "signInFactors", label: "sign-in factors", key: ["id"] },
  { table: "person_keys", count: "personKeys", label: "person keys", key: ["user_name"] },
  { table: "directory_entries", count: "directoryEntries", label: "directory entries", key: ["kind", "id"] },
];

/** Tables deliberately left behind, each with why: live or minutes-long state, rebuilt on the fleet. */
export const NOT_COPIED: Readonly<Record<string, string>> = {
  console_sessions: "console sign-ins: people sign in again on the fleet",
  rate_limits: "rate counters that expire within minutes",
  oidc_pending: "OIDC sign-ins under way, minutes long",
  factor_pending: "second-factor steps under way, minutes long",
  oidc_id_tokens: "sign-out tokens of console sessions, which are not copied either",
  fleet_budget: "the fleet's live pacing, rebuilt from the service's answers",
  fleet_members: "live gateways' heartbeats: each gateway writes its own",
  ledger_pending: "PostgreSQL's unsealed rows; SQLite seals each row as it writes (refused if not empty)",
};

type Row = Record<string, unknown>;
type Counts = Record<string, number>;

const quote = (c: string): string => (c === "user" ? '"user"' : c);

/** The definition's columns PostgreSQL takes as given (no serial key), that this SQLite file has. */
function columnsOf(db: Database.Database, table: string): string[] {
  const def = TABLES.find((t) => tableName(t, "postgres") === table);
  if (!def) throw new FaxgateError("INTERNAL", `store migrate: ${table} is not in the schema definition`);
  const sqliteName = tableName(def, "sqlite");
  const has = new Set(
    (db.prepare(`PRAGMA table_info(${sqliteName})`).all() as Array<{ name: string }>).map((c) => c.name),
  );
  return def.columns
    .filter((c) => c.only !== "sqlite" && c.type !== "serial" && c.type !== "bigserial" && has.has(c.name))
    .map((c) => c.name);
}

const insertSql = (table: string, cols: string[], tail: string): string =>
  `INSERT INTO ${table} (${cols.map(quote).join(", ")}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(", ")}) ON CONFLICT DO NOTHING${tail}`;

/** Before anything is copied: SQLite never leaves a ledger row unsealed, and ledger_pending is not copied. */
export function refuseUnsealedLedger(db: Database.Database, tables: Set<string>): void {
  if (!tables.has("ledger_pending")) return;
  const n = (db.prepare("SELECT COUNT(*) AS n FROM ledger_pending").get() as { n: number }).n;
  if (n > 0)
    throw new FaxgateError(
      "USAGE",
      `the SQLite ledger has ${n} unsealed rows: start the daemon once and stop it, then migrate`,
    );
}

/**
 * A table's rows in rowid order, a page at a time: received faxes carry their documents, and a
 * clinic's years of them do not fit in memory at once (an open iterator would also keep the
 * connection from the children's reads).
 */
function* pagesOf(db: Database.Database, table: string): Generator<Row> {
  const page = db.prepare(`SELECT rowid AS _rowid, * FROM ${table} WHERE rowid > ? ORDER BY rowid LIMIT 100`);
  let after = -1;
  for (;;) {
    const rows = page.all(after) as Row[];
    if (rows.length === 0) return;
    yield* rows;
    after = rows[rows.length - 1]!._rowid as number;
  }
}

/**
 * The rows of `rows` that PostgreSQL's rows of `table` under `parentColumn` = `parent` lack. A
 * row with no key of its own (an event: its serial id is each database's own) is known by all
 * of `cols`, compared as multisets: an event the fleet added to the same job is not taken for
 * one of SQLite's, nor are two alike (the same time to the millisecond) taken for one.
 */
export async function missingRows(
  c: pg.Client,
  o: { table: string; cols: string[]; parentColumn: string; parent: string; rows: Row[] },
): Promise<Row[]> {
  if (o.rows.length === 0) return [];
  const have = await c.query<Row>(
    `SELECT ${o.cols.map(quote).join(", ")} FROM ${o.table} WHERE ${o.parentColumn} = $1`,
    [o.parent],
  );
  const key = (r: Row): string => JSON.stringify(o.cols.map((k) => (r[k] == null ? null : String(r[k]))));
  const left = new Map<string, number>();
  for (const r of have.rows) left.set(key(r), (left.get(key(r)) ?? 0) + 1);
  const missing: Row[] = [];
  for (const r of o.rows) {
    const n = left.get(key(r)) ?? 0;
    if (n > 0) left.set(key(r), n - 1);
    else missing.push(r);
  }
  return missing;
}

/** What copyTables learnt that verifyTables and the report need. */
export interface TablesCopy {
  /** SQLite's received fax id -> PostgreSQL's, for the faxes PostgreSQL holds under another id */
  faxIds: Map<string, string>;
  /** rows left out, by count name ("skip" tables) */
  skipped: Counts;
}

/** Copies every COPIED_TABLES table the SQLite file has; fills `source` and `copied` by count name. */
export async function copyTables(
  c: pg.Client,
  db: Database.Database,
  tables: Set<string>,
  source: Counts,
  copied: Counts,
): Promise<TablesCopy> {
  const faxIds = new Map<string, string>();
  const skipped: Counts = {};
  for (const t of COPIED_TABLES) {
    source[t.count] = 0;
    copied[t.count] = 0;
    for (const ch of t.children ?? []) {
      source[ch.count] = 0;
      copied[ch.count] = 0;
    }
    if (!tables.has(t.table)) continue; // a queue from before the table: nothing to copy
    const cols = columnsOf(db, t.table);
    source[t.count] = (db.prepare(`SELECT COUNT(*) AS n FROM ${t.table}`).get() as { n: number }).n;
    const kids = (t.children ?? [])
      .filter((ch) => tables.has(ch.table))
      .map((ch) => ({
        ...ch,
        cols: columnsOf(db, ch.table),
        of: db.prepare(`SELECT * FROM ${ch.table} WHERE ${ch.parentColumn} = ? ORDER BY rowid`),
      }));
    const sql = insertSql(t.table, cols, kids.length ? " RETURNING 1 AS n" : "");
    for (const row of pagesOf(db, t.table)) {
      let r = row;
      const other = t.fax ? faxIds.get(String(row[t.fax.column])) : undefined;
      if (t.fax && other !== undefined) {
        if (t.fax.ofOtherId === "skip") {
          skipped[t.count] = (skipped[t.count] ?? 0) + 1;
          continue;
        }
        r = { ...row, [t.fax.column]: other };
      }
      const children = kids.map((k) => ({ k, rows: k.of.all(r[k.parentKey]) as Row[] }));
      for (const ch of children) source[ch.k.count]! += ch.rows.length;
      if (children.length === 0) {
        copied[t.count]! +=
          (
            await c.query(
              sql,
              cols.map((k) => r[k] ?? null),
            )
          ).rowCount ?? 0;
        continue;
      }
      // the row and its children in one transaction: a new parent's children all; a parent
      // PostgreSQL has (a rerun, or the same fax under another id) those it lacks
      await c.query("BEGIN");
      try {
        const isNew =
          ((
            await c.query(
              sql,
              cols.map((k) => r[k] ?? null),
            )
          ).rowCount ?? 0) > 0;
        let parent = String(r[t.children![0]!.parentKey]);
        if (isNew) copied[t.count]!++;
        else if (t.table === "received_faxes") {
          // the service's fax id is its natural key: PostgreSQL's row of it, maybe under another id
          const there = await c.query<{ id: string }>("SELECT id FROM received_faxes WHERE message_id = $1", [
            r.message_id,
          ]);
          const id = there.rows[0]?.id;
          if (id !== undefined && id !== parent) {
            faxIds.set(parent, id);
            parent = id;
          }
        }
        for (const ch of children) {
          const rows = ch.rows.map((kr) => ({ ...kr, [ch.k.parentColumn]: parent }));
          const add = isNew
            ? rows
            : await missingRows(c, {
                table: ch.k.table,
                cols: ch.k.cols,
                parentColumn: ch.k.parentColumn,
                parent,
                rows,
              });
          for (const kr of add) {
            await c.query(
              insertSql(ch.k.table, ch.k.cols, ""),
              ch.k.cols.map((k) => kr[k] ?? null),
            );
            copied[ch.k.count]!++;
          }
        }
        await c.query("COMMIT");
      } catch (err) {
        await c.query("ROLLBACK").catch(() => undefined);
        throw err;
      }
    }
  }
  return { faxIds, skipped };
}

/** What PostgreSQL holds of the source's rows, per count name (children: at least as many). */
export async function verifyTables(
  c: pg.Client,
  db: Database.Database,
  tables: Set<string>,
  source: Counts,
  copy: TablesCopy,
): Promise<string[]> {
  const short: string[] = [];
  const faxId = (id: unknown): string => copy.faxIds.get(String(id)) ?? String(id);
  for (const t of COPIED_TABLES) {
    if (!tables.has(t.table)) continue;
    const f = t.fax;
    const picked = f ? [...new Set([...t.key, f.column])] : t.key;
    let keys = db.prepare(`SELECT ${picked.join(", ")} FROM ${t.table}`).all() as Row[];
    // skipped rows are not looked for; mapped ones under the fax's id in PostgreSQL
    if (f?.ofOtherId === "skip") keys = keys.filter((r) => !copy.faxIds.has(String(r[f.column])));
    if (f?.ofOtherId === "map") keys = keys.map((r) => ({ ...r, [f.column]: faxId(r[f.column]) }));
    const expected = source[t.count]! - (copy.skipped[t.count] ?? 0);
    const arrays = t.key.map((k) => keys.map((r) => String(r[k])));
    const unnest = t.key.map((_, i) => `$${i + 1}::text[]`).join(", ");
    const got = Number(
      (
        await c.query<{ n: string }>(
          `SELECT COUNT(*) AS n FROM ${t.table} WHERE (${t.key.join(", ")}) IN (SELECT * FROM unnest(${unnest}))`,
          arrays,
        )
      ).rows[0]!.n,
    );
    if (got !== expected) short.push(`${t.label} ${got} of ${expected}`);
    for (const ch of t.children ?? []) {
      if (!tables.has(ch.table)) continue;
      const parents = (db.prepare(`SELECT ${ch.parentKey} AS k FROM ${t.table}`).all() as Row[]).map((r) => faxId(r.k));
      const n = Number(
        (
          await c.query<{ n: string }>(`SELECT COUNT(*) AS n FROM ${ch.table} WHERE ${ch.parentColumn} = ANY($1)`, [
            parents,
          ])
        ).rows[0]!.n,
      );
      if (n < source[ch.count]!) short.push(`${ch.label} ${n} of ${source[ch.count]}`);
    }
  }
  return short;
}
