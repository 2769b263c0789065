// The one schema definition (src/store/sql/schema.ts) against what the shipped migration steps
// make, on both backends: a database built from each, then their tables, columns (type, NOT
// NULL, default, key), foreign keys, CHECKs and indexes compared. A new step without its line in
// the definition (or the reverse) fails here.
import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { PG_MIGRATIONS } from "../../src/store/postgres/schema.js";
import { schemaDdl } from "../../src/store/sql/schema.js";
import { migrate } from "../../src/store/sqlite/migrations.js";
import { usePgCluster } from "../helpers/store-backends.js";

const squash = (s: string | null): string | null => (s === null ? null : s.replace(/\s+/g, " ").trim());

/** SQLite's CHECKs are kept only in the table's text: each `CHECK (...)`, its parentheses matched. */
function sqliteChecks(sql: string): string[] {
  const out: string[] = [];
  for (let i = sql.indexOf("CHECK ("); i !== -1; i = sql.indexOf("CHECK (", i + 1)) {
    let depth = 0;
    let j = i + 6;
    for (; j < sql.length; j++) {
      if (sql[j] === "(") depth++;
      else if (sql[j] === ")" && --depth === 0) break;
    }
    out.push(squash(sql.slice(i, j + 1))!);
  }
  return out.sort();
}

function describeSqlite(db: Database.Database): unknown {
  const tables = db
    .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all() as Array<{ name: string; sql: string }>;
  return tables.map((t) => ({
    table: t.name,
    columns: db.pragma(`table_info(${t.name})`),
    foreignKeys: (db.pragma(`foreign_key_list(${t.name})`) as Array<Record<string, unknown>>).map(
      ({ table, from, to, on_delete }) => ({ table, from, to, on_delete }),
    ),
    checks: sqliteChecks(t.sql),
    autoincrement: /AUTOINCREMENT/i.test(t.sql),
    indexes: (
      db
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? ORDER BY name")
        .all(t.name) as Array<{ name: string; sql: string | null }>
    ).map((i) => ({
      name: i.name.startsWith("sqlite_autoindex_") ? "(key)" : i.name,
      // the column list and WHERE clause, whatever the table's name was when it was made
      sql: squash(i.sql?.replace(/^CREATE INDEX \S+ ON \S+?\(/i, "(").replace(/"user"/g, "user") ?? null),
    })),
  }));
}

function sqliteFrom(make: (db: Database.Database) => void): unknown {
  const db = new Database(":memory:");
  try {
    make(db);
    return describeSqlite(db);
  } finally {
    db.close();
  }
}

async function describePg(url: string): Promise<unknown> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const q = async (text: string) => (await c.query(text)).rows;
    return {
      columns: await q(`SELECT table_name, column_name, data_type, is_nullable, column_default, ordinal_position
        FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'faxgate_schema'
        ORDER BY table_name, column_name`),
      constraints: await q(`SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(oid) AS def
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> 'faxgate_schema'
        ORDER BY 1, 2`),
      indexes: await q(`SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename <> 'faxgate_schema' ORDER BY 1, 2`),
    };
  } finally {
    await c.end();
  }
}

describe("the one schema definition", () => {
  it("renders to the SQLite schema the migration steps make", () => {
    const migrated = sqliteFrom((db) => migrate(db));
    const defined = sqliteFrom((db) => db.exec(schemaDdl("sqlite")));
    expect(defined).toEqual(migrated);
  });

  const postgres = usePgCluster("the schema definition on PostgreSQL");
  describe.skipIf(postgres.missing !== null)("on PostgreSQL", () => {
    it("renders to the PostgreSQL schema the migration steps make", async () => {
      const migratedUrl = await postgres.database();
      const definedUrl = await postgres.database();
      for (const [url, steps] of [
        [migratedUrl, PG_MIGRATIONS],
        [definedUrl, [schemaDdl("postgres")]],
      ] as const) {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        for (const step of steps) await c.query(step);
        await c.end();
      }
      const [migrated, defined] = await Promise.all([describePg(migratedUrl), describePg(definedUrl)]);
      expect(defined).toEqual(migrated);
    });
  });
});
