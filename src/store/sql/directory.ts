// People and groups pushed over SCIM (issue 50), kept in the queue's store so they survive a
// restart and every gateway of a fleet sees the same list. One row per resource, its SCIM body as
// JSON; `name_key` is the userName or displayName in lower case (SCIM's userName is compared
// without case), unique per kind, checked inside the write's transaction under one lock.
import { type Db, lockKey, nowIso, type Runner } from "./db.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped: never edit. */
export function directoryTables(): string {
  return `
  CREATE TABLE directory_entries (
    kind TEXT NOT NULL CHECK (kind IN ('user','group')),
    id TEXT NOT NULL,
    name_key TEXT NOT NULL,
    external_id TEXT,
    body TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kind, id)
  );
  CREATE INDEX directory_entries_name ON directory_entries(kind, name_key);
  `;
}

export type DirectoryKind = "user" | "group";

export interface DirectoryEntry {
  kind: DirectoryKind;
  id: string;
  externalId: string | null;
  body: Record<string, unknown>;
  version: number;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  kind: string;
  id: string;
  external_id: string | null;
  body: string;
  version: number | string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = "kind, id, external_id, body, version, created_at, updated_at";

const entry = (r: Row): DirectoryEntry => ({
  kind: r.kind as DirectoryKind,
  id: r.id,
  externalId: r.external_id,
  body: JSON.parse(r.body) as Record<string, unknown>,
  version: Number(r.version),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function directoryEntries(db: Runner, kind: DirectoryKind): Promise<DirectoryEntry[]> {
  const rows = await db.all<Row>(`SELECT ${COLUMNS} FROM directory_entries WHERE kind = ? ORDER BY created_at, id`, [
    kind,
  ]);
  return rows.map(entry);
}

export async function directoryEntry(db: Runner, kind: DirectoryKind, id: string): Promise<DirectoryEntry | null> {
  const r = await db.get<Row>(`SELECT ${COLUMNS} FROM directory_entries WHERE kind = ? AND id = ?`, [kind, id]);
  return r ? entry(r) : null;
}

export async function directoryEntryByName(
  db: Runner,
  kind: DirectoryKind,
  name: string,
): Promise<DirectoryEntry | null> {
  const r = await db.get<Row>(`SELECT ${COLUMNS} FROM directory_entries WHERE kind = ? AND name_key = ?`, [
    kind,
    name.toLowerCase(),
  ]);
  return r ? entry(r) : null;
}

/**
 * Writes one resource: `change` sees the entry as it is (null: none) inside the transaction and
 * answers the body to store, or throws. A name another entry of the kind holds is refused
 * (`taken` answers the error to throw). Answers the entry as stored.
 */
export function writeDirectoryEntry(
  db: Db,
  kind: DirectoryKind,
  id: string,
  change: (current: DirectoryEntry | null) => {
    name: string;
    externalId: string | null;
    body: Record<string, unknown>;
  },
  taken: (name: string) => Error,
): Promise<DirectoryEntry> {
  return db.tx("directory write", async (t) => {
    await t.lock(lockKey("directory"));
    const current = await directoryEntry(t, kind, id);
    const next = change(current);
    const holder = await t.get<{ id: string }>("SELECT id FROM directory_entries WHERE kind = ? AND name_key = ?", [
      kind,
      next.name.toLowerCase(),
    ]);
    if (holder && holder.id !== id) throw taken(next.name);
    const at = nowIso(db);
    const body = JSON.stringify(next.body);
    if (current)
      await t.run(
        "UPDATE directory_entries SET name_key = ?, external_id = ?, body = ?, version = version + 1, updated_at = ? WHERE kind = ? AND id = ?",
        [next.name.toLowerCase(), next.externalId, body, at, kind, id],
      );
    else
      await t.run(
        "INSERT INTO directory_entries (kind, id, name_key, external_id, body, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?)",
        [kind, id, next.name.toLowerCase(), next.externalId, body, at, at],
      );
    const stored = await directoryEntry(t, kind, id);
    return stored!;
  });
}

export async function deleteDirectoryEntry(db: Db, kind: DirectoryKind, id: string): Promise<boolean> {
  return db.tx("directory delete", async (t) => {
    await t.lock(lockKey("directory"));
    const r = await t.run("DELETE FROM directory_entries WHERE kind = ? AND id = ?", [kind, id]);
    return r.changes > 0;
  });
}
