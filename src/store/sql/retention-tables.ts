// The retention tables (issue 56): legal holds, and the service copies to delete with what became
// of each delete. One text for both backends (sqlite/migrations.ts, postgres/schema.ts each run it
// as a step of its own). Part of a shipped step: never edit it; a change is a new step per backend.
export function retentionTables(): string {
  return `
  CREATE TABLE legal_holds (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('user','number','job','received','matter')),
    value TEXT NOT NULL,
    reason TEXT NOT NULL,
    held_by TEXT NOT NULL,
    held_at TEXT NOT NULL,
    released_by TEXT,
    released_at TEXT
  );
  CREATE INDEX legal_holds_active ON legal_holds(kind, value) WHERE released_at IS NULL;
  CREATE TABLE service_purges (
    message_id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    object_kind TEXT NOT NULL CHECK (object_kind IN ('job','received')),
    object_id TEXT NOT NULL,
    number TEXT,
    matters TEXT NOT NULL DEFAULT '[]',
    due_at TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending','deleting','done','failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    locked_until TEXT,
    last_error TEXT,
    alerted INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    done_at TEXT
  );
  CREATE INDEX service_purges_due ON service_purges(state, next_attempt_at);
  `;
}
