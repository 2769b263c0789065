// Schema steps keyed on PRAGMA user_version: step i brings a file from version i to i+1.
// Never edit a shipped step; append a new one. Times are ISO strings (UTC, fixed width), so
// text comparison orders them.
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user TEXT NOT NULL,
    state TEXT NOT NULL,
    cover TEXT NOT NULL,
    documents TEXT NOT NULL,
    original TEXT,
    scheduled_at TEXT,
    tags TEXT NOT NULL,
    dedupe_key TEXT,
    meta TEXT NOT NULL,
    corrupt_reason TEXT,
    finals INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    finished_at TEXT
  );
  CREATE INDEX jobs_state ON jobs(state, created_at);
  CREATE INDEX jobs_dedupe ON jobs(dedupe_key, created_at) WHERE dedupe_key IS NOT NULL;
  CREATE INDEX jobs_user ON jobs(user, created_at);

  CREATE TABLE recipients (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    number TEXT NOT NULL,
    name TEXT,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    fax_tries INTEGER NOT NULL DEFAULT 0,
    budget_from TEXT NOT NULL,
    next_attempt_at TEXT,
    last_error TEXT,
    message_id TEXT,
    send_id TEXT,
    result_code TEXT,
    result_info TEXT,
    error_code TEXT,
    error_info TEXT,
    pages INTEGER,
    pages_count INTEGER,
    duration INTEGER,
    fax_attempt INTEGER,
    api_calls REAL NOT NULL DEFAULT 0,
    locked_by TEXT,
    locked_until TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    sent_at TEXT,
    finished_at TEXT,
    PRIMARY KEY (job_id, idx)
  );
  CREATE INDEX recipients_due ON recipients(state, next_attempt_at);
  CREATE INDEX recipients_number ON recipients(number, state);
  CREATE INDEX recipients_message ON recipients(message_id) WHERE message_id IS NOT NULL;
  CREATE INDEX recipients_send ON recipients(send_id) WHERE send_id IS NOT NULL;

  CREATE TABLE notifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    user TEXT NOT NULL,
    job_id TEXT,
    dedupe_key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_error TEXT,
    locked_by TEXT,
    locked_until TEXT,
    created_at TEXT NOT NULL,
    sent_at TEXT
  );
  CREATE INDEX notifications_due ON notifications(state, next_attempt_at);

  CREATE TABLE kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
];
