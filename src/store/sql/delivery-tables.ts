// The connector deliveries table (issue 52): one row per (received fax, connector it goes to), a
// small queue of its own (pending -> delivering under a lease -> delivered | failed). One text for
// both backends (sqlite/migrations.ts, postgres/schema.ts each run it as a step of its own). Part
// of a shipped step: never edit it; a change is a new step per backend.
export function deliveryTables(): string {
  return `
  CREATE TABLE deliveries (
    id TEXT NOT NULL UNIQUE,
    fax_id TEXT NOT NULL REFERENCES received_faxes(id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('fhir','hl7','webdav','smb')),
    rule TEXT NOT NULL,
    owner TEXT NOT NULL,
    spec TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending','delivering','delivered','failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    locked_by TEXT,
    locked_until TEXT,
    last_error TEXT,
    result TEXT,
    created_at TEXT NOT NULL,
    delivered_at TEXT,
    PRIMARY KEY (fax_id, target)
  );
  CREATE INDEX deliveries_due ON deliveries(state, next_attempt_at);
  `;
}
