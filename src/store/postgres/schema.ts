// PostgreSQL schema steps, applied in order inside one transaction under an advisory lock (two
// instances starting together: one migrates, the other waits and finds it done). Never edit a
// shipped step; append a new one. Times are ISO strings (UTC, fixed width), as in the SQLite
// store, so both backends compare and return them the same way. The state CHECKs are written
// out: a shipped step never changes (test/store/schema-steps.test.ts), a new state is a new step.
import { receivedTables } from "../received-tables.js";
import { signedUsesTable } from "../signed-uses.js";
import { ledgerPendingTable, ledgerTable } from "../sql/ledger.js";
import { directoryTables } from "../sql/directory.js";
import { fleetTables } from "../sql/fleet-tables.js";
import { retentionTables } from "../sql/retention-tables.js";
import { largeQueueIndexes, sharedStateTables } from "../sql/shared-state.js";
import { deliveryTables } from "../sql/delivery-tables.js";
import { deliveryKindGraph } from "../sql/delivery-kinds.js";
import { receivedTextStoredWords, receivedTextTables } from "../sql/received-text-tables.js";
import { signInFactorsTable } from "../sql/sign-in-factors.js";
import { oidcPendingTable } from "../sql/oidc-pending.js";
import { factorPendingTable } from "../sql/factor-pending.js";
import { oidcIdTokensTable } from "../sql/oidc-id-tokens.js";
import { personKeysTable } from "../sql/person-keys.js";
import { CALL_LEFT_STEP } from "../sql/call-left.js";
import { sentTextTables } from "../sql/sent-text-tables.js";
import { lockKey, type PgContext } from "./context.js";

export const PG_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    -- insertion order: jobs enqueued in the same millisecond are sent and listed in that order
    seq BIGSERIAL NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('smtp','spool','cli')),
    "user" TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued','active','held','delivered','failed','partial','cancelled','corrupt')),
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
  CREATE INDEX jobs_user ON jobs("user", created_at);
  CREATE INDEX jobs_updated ON jobs(updated_at);

  CREATE TABLE recipients (
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
    api_calls DOUBLE PRECISION NOT NULL DEFAULT 0,
    locked_by TEXT,
    locked_until TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    sent_at TEXT,
    finished_at TEXT,
    PRIMARY KEY (job_id, idx),
    -- a row in sending always carries its lease
    CHECK (state <> 'sending' OR (locked_by IS NOT NULL AND locked_until IS NOT NULL AND send_id IS NOT NULL))
  );
  CREATE INDEX recipients_due ON recipients(state, next_attempt_at);
  CREATE INDEX recipients_number ON recipients(number, state);
  CREATE INDEX recipients_message ON recipients(message_id) WHERE message_id IS NOT NULL;

  -- the documents themselves: every instance reads them from here, never from one host's disk
  CREATE TABLE documents (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    file TEXT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (job_id, file)
  );

  CREATE TABLE job_events (
    id BIGSERIAL PRIMARY KEY,
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    idx INTEGER,
    at TEXT NOT NULL,
    transition TEXT NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    detail TEXT
  );
  CREATE INDEX job_events_job ON job_events(job_id, id);

  CREATE TABLE notifications (
    id SERIAL PRIMARY KEY,
    kind TEXT NOT NULL,
    "user" TEXT NOT NULL,
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
  CREATE INDEX notifications_due ON notifications(state, next_attempt_at);
  CREATE INDEX notifications_job ON notifications(job_id);

  CREATE TABLE kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // the console (web) and the mailbox intake (imap) are doors of their own
  `
  ALTER TABLE jobs DROP CONSTRAINT jobs_source_check;
  ALTER TABLE jobs ADD CONSTRAINT jobs_source_check CHECK (source IN ('smtp','spool','cli','web','imap'));
  `,
  // Received faxes kept with their document (store/received.ts), as in the SQLite store.
  receivedTables({ blob: "BYTEA", serial: "BIGSERIAL PRIMARY KEY" }),
  // The replay record of signed mail (store/signed-uses.ts), as in the SQLite store.
  signedUsesTable(),
  // The compliance ledger (store/sql/ledger.ts), as in the SQLite store.
  ledgerTable(),
  // RETENTION STEP (issue 56, branch retention; its own step, renumbered at merge if need be):
  // legal holds and the service copies to delete (store/sql/retention.ts), as in the SQLite store.
  retentionTables(),
  // STEP (issue 55, branch shared): console sessions shared by the fleet, the counters of
  // rate-limiter-flexible's RateLimiterPostgres and the large queue's partial indexes
  // (store/sql/shared-state.ts). Expand only: older gateways never read the tables, and an index
  // changes no answer (docs/ha.md, rolling upgrades).
  `${sharedStateTables()}${largeQueueIndexes()}`,
  // STEP (issue 52, branch connectors): received faxes' deliveries to connectors, as in the SQLite store.
  deliveryTables(),
  // STEP (issue 51, branch ocr): the OCR text of received faxes, its duty and its GIN word index
  // (store/sql/received-text-tables.ts), as in the SQLite store.
  receivedTextTables("postgres"),
  // STEP (issue 50, branch signin): console sign-in factors, passkeys and TOTP, per person
  // (store/sql/sign-in-factors.ts), as in the SQLite store.
  signInFactorsTable(),
  // STEP (issue 50, branch directory): people and groups pushed over SCIM (store/sql/directory.ts),
  // as in the SQLite store.
  directoryTables(),
  // STEP (issue 55, branch budget): the fleet's shared account budget and its members
  // (store/sql/fleet-budget.ts); unused by SQLite, kept so that the backends' schemas agree.
  fleetTables("DOUBLE PRECISION"),
  // STEP (issue 50, branch keys): the keys minted for people and their service user mappings
  // (store/sql/person-keys.ts), as in the SQLite store.
  personKeysTable(),
  // STEP (issue 52, branch connectors2): deliveries may go to Microsoft Graph (kind 'graph'), the
  // kind constraint swapped (store/sql/delivery-kinds.ts), as in the SQLite store.
  deliveryKindGraph("postgres"),
  // STEP (issue 50, branch ident3): OIDC sign-ins under way, shared by a fleet
  // (store/sql/oidc-pending.ts), as in the SQLite store.
  oidcPendingTable(),
  // STEP (issue 50, branch factors6): second-factor sign-ins and enrolments under way, and the ID
  // tokens of provider sessions for sign-out, shared by a fleet (store/sql/factor-pending.ts,
  // store/sql/oidc-id-tokens.ts), as in the SQLite store.
  factorPendingTable() + oidcIdTokensTable(),
  // STEP (issue 51, branch reply7): the words of each received fax's text stored in a generated
  // column with its GIN index, ranked on it (store/sql/received-text-tables.ts). PostgreSQL only:
  // SQLite's FTS5 table keeps its words already.
  receivedTextStoredWords(),
  // STEP (issue 55, branch fleet7): whether a claimed send's call left (store/sql/leases.ts), so
  // a send killed before its call left goes back to the queue instead of being parked.
  CALL_LEFT_STEP,
  // STEP (issue 56, branch ledger7): ledger rows committed but not yet sealed into the chain
  // (store/sql/ledger.ts: PostgreSQL's append; SQLite seals at once and keeps it empty), as in the SQLite store.
  ledgerPendingTable("postgres"),
  // STEP (issue 51, branch sentocr): the OCR text of sent faxes (ocr.sent), its duty and its
  // stored words with their GIN index, the row going with its job (store/sql/sent-text-tables.ts),
  // as in the SQLite store.
  sentTextTables("postgres"),
];

/** Brings the schema up to date, one instance at a time (the others wait on the lock and find it done). */
export async function migrate(ctx: PgContext): Promise<void> {
  await ctx.tx(
    "migrate",
    async (c) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey("migrate")]);
      await c.query("CREATE TABLE IF NOT EXISTS faxgate_schema (version INTEGER NOT NULL)");
      const r = await c.query<{ version: number }>("SELECT version FROM faxgate_schema");
      let version = r.rows[0]?.version ?? 0;
      if (r.rows.length === 0) await c.query("INSERT INTO faxgate_schema (version) VALUES (0)");
      for (; version < PG_MIGRATIONS.length; version++) {
        await c.query(PG_MIGRATIONS[version]!);
        await c.query("UPDATE faxgate_schema SET version = $1", [version + 1]);
      }
    },
    1,
  );
}
