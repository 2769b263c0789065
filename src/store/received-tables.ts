// The received-fax tables, one text for both backends (sqlite/migrations.ts step 6,
// postgres/schema.ts step 3): the dialects differ only in the blob type and the serial key.
// Part of shipped steps: never edit it; a change to these tables is a new step per backend.
export function receivedTables(dialect: { blob: string; serial: string }): string {
  return `
  CREATE TABLE received_faxes (
    id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL UNIQUE,
    user_name TEXT NOT NULL,
    dialled TEXT,
    sender TEXT,
    csid TEXT,
    pages INTEGER,
    status TEXT NOT NULL,
    received_at TEXT NOT NULL,
    stored_at TEXT NOT NULL,
    groups TEXT NOT NULL DEFAULT '[]',
    state TEXT NOT NULL CHECK (state IN ('new','taken','done')),
    owner TEXT,
    note TEXT,
    escalated_at TEXT,
    bytes INTEGER NOT NULL DEFAULT 0,
    data ${dialect.blob}
  );
  CREATE INDEX received_faxes_time ON received_faxes(received_at);
  CREATE TABLE received_events (
    id ${dialect.serial},
    fax_id TEXT NOT NULL REFERENCES received_faxes(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    actor TEXT,
    detail TEXT
  );
  CREATE INDEX received_events_fax ON received_events(fax_id, id);
  `;
}
