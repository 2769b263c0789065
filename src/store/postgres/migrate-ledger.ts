// `faxgate store migrate`'s part for the compliance records: the ledger's rows exactly as written
// (seq, time, hashes: each row's hash covers its own fields, so the chain verifies on PostgreSQL as
// it did on SQLite) and the legal holds (a hold must not lapse by moving the queue). A rerun copies
// the rows written since; a PostgreSQL ledger whose rows are not this chain's first rows is refused,
// naming the first row that differs: two chains cannot be joined without breaking one.
import type Database from "better-sqlite3";
import type pg from "pg";
import { FaxgateError } from "../../errors.js";
import { LEDGER_COLUMNS } from "../sql/ledger.js";

const LEDGER_COLS = LEDGER_COLUMNS;
const HOLD_COLS = ["id", "kind", "value", "reason", "held_by", "held_at", "released_by", "released_at"];

type Row = Record<string, unknown>;

export interface CopiedRecords {
  ledger: { source: number; copied: number };
  holds: { source: number; copied: number };
}

export async function copyLedgerAndHolds(
  c: pg.Client,
  db: Database.Database,
  tables: Set<string>,
): Promise<CopiedRecords> {
  const out: CopiedRecords = { ledger: { source: 0, copied: 0 }, holds: { source: 0, copied: 0 } };
  if (tables.has("ledger")) {
    const rows = db.prepare(`SELECT ${LEDGER_COLS.join(", ")} FROM ledger ORDER BY seq`).all() as Row[];
    out.ledger.source = rows.length;
    await c.query("BEGIN");
    try {
      // the same lock a gateway's append takes: no row is appended to PostgreSQL's chain meanwhile
      await c.query("SELECT pg_advisory_xact_lock(hashtext('faxgate:ledger'))");
      // rows a gateway committed there and no one sealed yet are another queue's history too
      const pending = Number(
        (await c.query<{ n: string }>("SELECT COUNT(*) AS n FROM ledger_pending")).rows[0]?.n ?? 0,
      );
      if (pending > 0)
        throw new FaxgateError(
          "USAGE",
          `PostgreSQL's ledger already holds rows of another chain (${pending} written by a gateway there, not yet sealed): the ledgers cannot be joined; migrate into an empty database`,
        );
      const there = (await c.query<{ seq: string; hash: string }>("SELECT seq, hash FROM ledger ORDER BY seq")).rows;
      for (const [i, r] of there.entries()) {
        const mine = rows[i];
        if (!mine || Number(r.seq) !== Number(mine.seq) || r.hash !== mine.hash)
          throw new FaxgateError(
            "USAGE",
            `PostgreSQL's ledger already holds rows of another chain (row ${r.seq} differs from this queue's): the ledgers cannot be joined; migrate into an empty database`,
          );
      }
      for (const r of rows.slice(there.length)) {
        await c.query(
          `INSERT INTO ledger (${LEDGER_COLS.join(", ")}) VALUES (${LEDGER_COLS.map((_, i) => `$${i + 1}`).join(", ")})`,
          LEDGER_COLS.map((k) => r[k] ?? null),
        );
        out.ledger.copied++;
      }
      await c.query("COMMIT");
    } catch (err) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    }
  }
  if (tables.has("legal_holds")) {
    const holds = db.prepare(`SELECT ${HOLD_COLS.join(", ")} FROM legal_holds`).all() as Row[];
    out.holds.source = holds.length;
    for (const h of holds) {
      const r = await c.query(
        `INSERT INTO legal_holds (${HOLD_COLS.join(", ")}) VALUES (${HOLD_COLS.map((_, i) => `$${i + 1}`).join(", ")}) ON CONFLICT (id) DO NOTHING`,
        HOLD_COLS.map((k) => h[k] ?? null),
      );
      out.holds.copied += r.rowCount ?? 0;
    }
  }
  return out;
}
