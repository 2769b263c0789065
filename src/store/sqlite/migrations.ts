// Schema steps keyed on PRAGMA user_version: step i brings a file from version i to i+1.
// Never edit a shipped step; append a new one (test/store/schema-steps.test.ts holds every
// shipped step to its text). Times are ISO strings (UTC, fixed width), so text comparison orders
// them.
import type Database from "better-sqlite3";
import { receivedTables } from "../received-tables.js";
import { signedUsesTable } from "../signed-uses.js";
import { ledgerPendingTable, ledgerTable } from "../sql/ledger.js";
import { directoryTables } from "../sql/directory.js";
import { fleetTables } from "../sql/fleet-tables.js";
import { retentionTables } from "../sql/retention-tables.js";
import { largeQueueIndexes, sharedStateTables } from "../sql/shared-state.js";
import { deliveryKindGraph } from "../sql/delivery-kinds.js";
import { deliveryTables } from "../sql/delivery-tables.js";
import { receivedTextTables } from "../sql/received-text-tables.js";
import { signInFactorsTable } from "../sql/sign-in-factors.js";
import { oidcPendingTable } from "../sql/oidc-pending.js";
import { factorPendingTable } from "../sql/factor-pending.js";
import { oidcIdTokensTable } from "../sql/oidc-id-tokens.js";
import { personKeysTable } from "../sql/person-keys.js";
import { CALL_LEFT_STEP } from "../sql/call-left.js";
import { sentTextTables } from "../sql/sent-text-tables.js";

/** The job states of steps 2 and 5, written out: a shipped step never changes, a new state is a new step. */
const JOB_STATES_V2 = ["queued", "active", "held", "delivered", "failed", "partial", "cancelled", "corrupt"];

const quoted = (words: readonly string[]): string => words.map((w) => `'${w}'`).join(",");

/**
 * SQLite cannot change a CHECK, so a new source or job state rebuilds `jobs`: a new table `tmp`
 * with the lists given, the rows copied (rowid kept: it orders jobs enqueued in one millisecond),
 * the old table dropped, the new one renamed and its indexes made again. The store runs it with
 * foreign keys off, as SQLite's ALTER TABLE guide says.
 */
function rebuildJobs(tmp: string, sources: readonly string[], states: readonly string[]): string {
  return `
  CREATE TABLE ${tmp} (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL CHECK (source IN (${quoted(sources)})),
    user TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN (${quoted(states)})),
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
  INSERT INTO ${tmp} (rowid, id, source, user, state, cover, documents, original, scheduled_at, tags, dedupe_key, meta, corrupt_reason, finals, created_at, updated_at, finished_at)
    SELECT rowid, id, source, user, state, cover, documents, original, scheduled_at, tags, dedupe_key, meta, corrupt_reason, finals, created_at, updated_at, finished_at FROM jobs;
  DROP TABLE jobs;
  ALTER TABLE ${tmp} RENAME TO jobs;
  CREATE INDEX jobs_state ON jobs(state, created_at);
  CREATE INDEX jobs_dedupe ON jobs(dedupe_key, created_at) WHERE dedupe_key IS NOT NULL;
  CREATE INDEX jobs_user ON jobs(user, created_at);
  CREATE INDEX jobs_created ON jobs(created_at);
  CREATE INDEX jobs_updated ON jobs(updated_at);
  CREATE INDEX jobs_source ON jobs(source, created_at);
`;
}

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
  // 2: CHECK constraints on every state column (a bogus state written by hand is refused, not
  // read back as an error later), and job_events: one row per step of a job's life. SQLite
  // cannot add a CHECK to a table, so jobs, recipients and notifications are rebuilt and their
  // rows copied (the store runs this with foreign keys off, as SQLite's ALTER TABLE guide says).
  // The state lists are written out here on purpose: a shipped step never changes; a new state
  // is a new step.
  `${rebuildJobs("jobs_v2", ["smtp", "spool", "cli"], JOB_STATES_V2)}
  CREATE TABLE recipients_v2 (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    number TEXT NOT NULL,
    name TEXT,
    state TEXT NOT NULL CHECK (state IN ('queued','sending','deferred','processing','delivered','failed','cancelled','held','unknown')),
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
  INSERT INTO recipients_v2 SELECT job_id, idx, number, name, state, attempts, fax_tries, budget_from, next_attempt_at, last_error, message_id, send_id,
    result_code, result_info, error_code, error_info, pages, pages_count, duration, fax_attempt, api_calls, locked_by, locked_until, created_at, updated_at, sent_at, finished_at
    FROM recipients;
  DROP TABLE recipients;
  ALTER TABLE recipients_v2 RENAME TO recipients;
  CREATE INDEX recipients_due ON recipients(state, next_attempt_at);
  CREATE INDEX recipients_number ON recipients(number, state);
  CREATE INDEX recipients_message ON recipients(message_id) WHERE message_id IS NOT NULL;
  CREATE INDEX recipients_send ON recipients(send_id) WHERE send_id IS NOT NULL;

  CREATE TABLE notifications_v2 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    user TEXT NOT NULL,
    job_id TEXT,
    dedupe_key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending','sent','skipped','failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_error TEXT,
    locked_by TEXT,
    locked_until TEXT,
    created_at TEXT NOT NULL,
    sent_at TEXT
  );
  INSERT INTO notifications_v2 SELECT id, kind, user, job_id, dedupe_key, payload, state, attempts, next_attempt_at, last_error, locked_by, locked_until, created_at, sent_at FROM notifications;
  DROP TABLE notifications;
  ALTER TABLE notifications_v2 RENAME TO notifications;
  CREATE INDEX notifications_due ON notifications(state, next_attempt_at);
  CREATE INDEX notifications_job ON notifications(job_id) WHERE job_id IS NOT NULL;

  CREATE TABLE job_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    idx INTEGER,
    at TEXT NOT NULL,
    transition TEXT NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    detail TEXT
  );
  CREATE INDEX job_events_job ON job_events(job_id, id);
  `,
  // Small documents given as bytes (a mail's text page, most printed files) are kept in the
  // database with their job's row (sqlite/enqueue.ts): one commit, no file, folder or fsync of
  // their own.
  `
  CREATE TABLE document_data (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    file TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, file)
  ) WITHOUT ROWID;
  `,
  // The same table with a rowid: documents of up to 256 KB are its rows, and SQLite's WITHOUT
  // ROWID tables are for rows of at most a twentieth of a page. Measured: a job's 173 KB of
  // blobs took 0.5-0.6 ms to insert there, 0.3 ms here.
  `
  CREATE TABLE document_data_v2 (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    file TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, file)
  );
  INSERT INTO document_data_v2 (job_id, file, data) SELECT job_id, file, data FROM document_data;
  DROP TABLE document_data;
  ALTER TABLE document_data_v2 RENAME TO document_data;
  `,
  // Two more doors into the queue: the console (web) and the mailbox intake (imap). SQLite cannot
  // change a CHECK, so jobs is rebuilt as in step 2 (foreign keys off while it runs).
  `${rebuildJobs("jobs_v3", ["smtp", "spool", "cli", "web", "imap"], JOB_STATES_V2)}  `,
  // Received faxes kept with their document (store/received.ts): the shared inbox, routing again,
  // finding one later; one row per service messageId. Their timeline is received_events.
  receivedTables({ blob: "BLOB", serial: "INTEGER PRIMARY KEY AUTOINCREMENT" }),
  // The replay record of signed mail (store/signed-uses.ts): a copy of a signed message is faxed once.
  signedUsesTable(),
  // The compliance ledger (store/sql/ledger.ts): one chain of audit rows, each with its hash.
  ledgerTable(),
  // RETENTION STEP (issue 56, branch retention; its own step, renumbered at merge if need be):
  // legal holds and the service copies to delete (store/sql/retention.ts).
  retentionTables(),
  // STEP (issue 55, branch shared): console sessions, rate-limiter-flexible's counters and the
  // large queue's partial indexes (store/sql/shared-state.ts). Expand only: older code never
  // reads the tables, and an index changes no answer.
  `${sharedStateTables()}${largeQueueIndexes()}`,
  // STEP (issue 52, branch connectors): received faxes' deliveries to FHIR, HL7, WebDAV and SMB,
  // each a queued row with its lease and retries (store/sql/deliveries.ts).
  deliveryTables(),
  // STEP (issue 51, branch ocr): the OCR text of received faxes, its duty and its FTS5 word index
  // (store/sql/received-text-tables.ts).
  receivedTextTables("sqlite"),
  // STEP (issue 50, branch signin): console sign-in factors, passkeys and TOTP, per person
  // (store/sql/sign-in-factors.ts).
  signInFactorsTable(),
  // STEP (issue 50, branch directory): people and groups pushed over SCIM (store/sql/directory.ts).
  directoryTables(),
  // STEP (issue 55, branch budget): the fleet's shared account budget and its members
  // (store/sql/fleet-budget.ts); unused by SQLite, kept so that the backends' schemas agree.
  fleetTables("REAL"),
  // STEP (issue 50, branch keys): the keys minted for people and their service user mappings
  // (store/sql/person-keys.ts).
  personKeysTable(),
  // STEP (issue 52, branch connectors2): deliveries may go to Microsoft Graph (kind 'graph'); the
  // table made again with the wider CHECK (store/sql/delivery-kinds.ts).
  deliveryKindGraph("sqlite"),
  // STEP (issue 50, branch ident3): OIDC sign-ins under way, shared by a fleet
  // (store/sql/oidc-pending.ts).
  oidcPendingTable(),
  // STEP (issue 50, branch factors6): second-factor sign-ins and enrolments under way, and the ID
  // tokens of provider sessions for sign-out, shared by a fleet (store/sql/factor-pending.ts,
  // store/sql/oidc-id-tokens.ts).
  factorPendingTable() + oidcIdTokensTable(),
  // STEP (issue 55, branch fleet7): whether a claimed send's call left (store/sql/leases.ts), so
  // a send killed before its call left goes back to the queue instead of being parked.
  CALL_LEFT_STEP,
  // STEP (issue 56, branch ledger7): ledger rows committed but not yet sealed into the chain
  // (store/sql/ledger.ts: PostgreSQL's append; SQLite seals at once and keeps it empty).
  ledgerPendingTable("sqlite"),
  // STEP (issue 51, branch sentocr): the OCR text of sent faxes (ocr.sent), its duty and its FTS5
  // word index, the row going with its job (store/sql/sent-text-tables.ts).
  sentTextTables("sqlite"),
];

/** Brings the file up to the last step, in one write transaction; a current file takes no lock. */
export function migrate(db: Database.Database): void {
  // Opening a current store takes no write lock: `faxgate jobs` beside a busy daemon must not
  // make the daemon's commits wait.
  if ((db.pragma("user_version", { simple: true }) as number) >= MIGRATIONS.length) return;
  // A step may rebuild a table (SQLite cannot add a CHECK in place): with foreign keys on,
  // dropping the old table would delete its children. Off for the steps, checked before commit.
  db.pragma("foreign_keys = OFF");
  try {
    db.transaction(() => {
      const version = db.pragma("user_version", { simple: true }) as number;
      for (let v = version; v < MIGRATIONS.length; v++) {
        db.exec(MIGRATIONS[v]!);
        db.pragma(`user_version = ${v + 1}`);
      }
      const broken = db.pragma("foreign_key_check") as unknown[];
      if (broken.length > 0)
        throw new Error(`the upgrade left ${broken.length} rows pointing at nothing; nothing was changed`);
    }).immediate();
  } finally {
    db.pragma("foreign_keys = ON");
  }
}
