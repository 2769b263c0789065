// The queue's schema as it stands, described once for both backends: one table list, rendered to
// SQLite's DDL and to PostgreSQL's (schemaDdl). New installs still run the shipped migration steps
// (sqlite/migrations.ts, postgres/schema.ts: never edited, only appended to), so this list is
// held to them instead: test/store/schema-definition.test.ts builds a database from each and
// compares their columns, keys, checks and indexes, on both backends. A schema change is a new
// step per backend AND its line here; the test fails until the three agree.
// Where the backends differ on purpose or by history, the line says so (`only`, a name per
// backend); each such difference is listed, not hidden.
import { JOB_STATES, RECIPIENT_STATES, SOURCE_WORDS } from "../types.js";
import type { DialectName } from "./db.js";
import { receivedTextStoredWords, receivedTextWords } from "./received-text-tables.js";
import { sentTextWords } from "./sent-text-tables.js";

type ColumnType = "text" | "integer" | "bigint" | "real" | "blob" | "serial" | "bigserial";

interface Column {
  name: string;
  type: ColumnType;
  notNull?: boolean;
  primaryKey?: boolean;
  unique?: boolean;
  default?: string;
  check?: string;
  references?: string;
  only?: DialectName;
}

interface Index {
  name: string;
  columns: string;
  where?: string;
  only?: DialectName;
}

interface Table {
  name: string | Readonly<Record<DialectName, string>>;
  columns: Column[];
  primaryKey?: string;
  checks?: Array<{ sql: string; only?: DialectName }>;
  indexes?: Index[];
  /** DDL that is not a column or a plain index (a word index, its triggers), per backend */
  extra?: (d: DialectName) => string;
}

const list = (words: readonly string[]): string => words.map((w) => `'${w}'`).join(",");
const cascade = (target: string): string => `${target} ON DELETE CASCADE`;
const text = (name: string, more: Partial<Column> = {}): Column => ({ name, type: "text", ...more });
const required = (name: string, more: Partial<Column> = {}): Column => text(name, { notNull: true, ...more });
const real = (name: string, more: Partial<Column> = {}): Column => ({ name, type: "real", notNull: true, ...more });
const integer = (name: string, more: Partial<Column> = {}): Column => ({ name, type: "integer", ...more });
const counter = (name: string): Column => integer(name, { notNull: true, default: "0" });
/** A ledger row's own fields: sealed in ledger, waiting in ledger_pending (sql/ledger.ts). */
const ledgerFields = (): Column[] => [
  required("at"),
  required("action"),
  required("actor_kind"),
  text("actor_id"),
  required("object_kind"),
  required("object_id"),
  required("door"),
  text("client"),
  text("number_hash"),
  required("detail"),
];

export const TABLES: readonly Table[] = [
  {
    name: "jobs",
    columns: [
      required("id", { primaryKey: true, notNull: false }),
      // PostgreSQL orders jobs enqueued in one millisecond by this; SQLite by its rowid
      { name: "seq", type: "bigserial", notNull: true, only: "postgres" },
      required("source", { check: `source IN (${list(Object.keys(SOURCE_WORDS))})` }),
      required("user"),
      required("state", { check: `state IN (${list(JOB_STATES)})` }),
      required("cover"),
      required("documents"),
      text("original"),
      text("scheduled_at"),
      required("tags"),
      text("dedupe_key"),
      required("meta"),
      text("corrupt_reason"),
      counter("finals"),
      required("created_at"),
      required("updated_at"),
      text("finished_at"),
    ],
    indexes: [
      { name: "jobs_state", columns: "state, created_at" },
      { name: "jobs_dedupe", columns: "dedupe_key, created_at", where: "dedupe_key IS NOT NULL" },
      { name: "jobs_user", columns: '"user", created_at' },
      { name: "jobs_created", columns: "created_at", only: "sqlite" },
      { name: "jobs_updated", columns: "updated_at" },
      { name: "jobs_source", columns: "source, created_at", only: "sqlite" },
    ],
  },
  {
    name: "recipients",
    columns: [
      required("job_id", { references: cascade("jobs(id)") }),
      integer("idx", { notNull: true }),
      required("number"),
      text("name"),
      required("state", { check: `state IN (${list(RECIPIENT_STATES)})` }),
      counter("attempts"),
      counter("fax_tries"),
      required("budget_from"),
      text("next_attempt_at"),
      text("last_error"),
      text("message_id"),
      text("send_id"),
      text("result_code"),
      text("result_info"),
      text("error_code"),
      text("error_info"),
      integer("pages"),
      integer("pages_count"),
      integer("duration"),
      integer("fax_attempt"),
      { name: "api_calls", type: "real", notNull: true, default: "0" },
      text("locked_by"),
      text("locked_until"),
      required("created_at"),
      required("updated_at"),
      text("sent_at"),
      text("finished_at"),
      // STEP (issue 55, branch fleet7): whether a claimed send's call left (sql/leases.ts)
      integer("call_left"),
    ],
    primaryKey: "job_id, idx",
    checks: [
      {
        // a row in sending always carries its lease (SQLite's steps never added it)
        sql: "state <> 'sending' OR (locked_by IS NOT NULL AND locked_until IS NOT NULL AND send_id IS NOT NULL)",
        only: "postgres",
      },
    ],
    indexes: [
      { name: "recipients_due", columns: "state, next_attempt_at" },
      { name: "recipients_number", columns: "number, state" },
      { name: "recipients_message", columns: "message_id", where: "message_id IS NOT NULL" },
      { name: "recipients_send", columns: "send_id", where: "send_id IS NOT NULL", only: "sqlite" },
      // the large queue (issue 55, sql/shared-state.ts): the live rows only, in the claim's order
      {
        name: "recipients_claimable",
        columns: "(COALESCE(next_attempt_at, created_at))",
        where: "state IN ('queued','deferred')",
      },
      { name: "recipients_in_flight", columns: "number", where: "state IN ('sending','unknown','processing')" },
    ],
  },
  {
    // small documents on SQLite (the others are files); every document on PostgreSQL
    name: { sqlite: "document_data", postgres: "documents" },
    columns: [
      required("job_id", { references: cascade("jobs(id)") }),
      required("file"),
      { name: "data", type: "blob", notNull: true },
    ],
    primaryKey: "job_id, file",
  },
  {
    name: "job_events",
    columns: [
      { name: "id", type: "bigserial", primaryKey: true },
      required("job_id", { references: cascade("jobs(id)") }),
      integer("idx"),
      required("at"),
      required("transition"),
      text("from_state"),
      required("to_state"),
      text("detail"),
    ],
    indexes: [{ name: "job_events_job", columns: "job_id, id" }],
  },
  {
    name: "notifications",
    columns: [
      { name: "id", type: "serial", primaryKey: true },
      required("kind"),
      required("user"),
      text("job_id"),
      required("dedupe_key", { unique: true }),
      required("payload"),
      required("state", { check: `state IN ('pending','sent','skipped','failed')` }),
      counter("attempts"),
      required("next_attempt_at"),
      text("last_error"),
      text("locked_by"),
      text("locked_until"),
      required("created_at"),
      text("sent_at"),
    ],
    indexes: [
      { name: "notifications_due", columns: "state, next_attempt_at" },
      { name: "notifications_job", columns: "job_id", where: "job_id IS NOT NULL", only: "sqlite" },
      { name: "notifications_job", columns: "job_id", only: "postgres" },
    ],
  },
  { name: "kv", columns: [required("key", { primaryKey: true, notNull: false }), required("value")] },
  {
    name: "received_faxes",
    columns: [
      required("id", { primaryKey: true, notNull: false }),
      required("message_id", { unique: true }),
      required("user_name"),
      text("dialled"),
      text("sender"),
      text("csid"),
      integer("pages"),
      required("status"),
      required("received_at"),
      required("stored_at"),
      required("groups", { default: "'[]'" }),
      required("state", { check: "state IN ('new','taken','done')" }),
      text("owner"),
      text("note"),
      text("escalated_at"),
      counter("bytes"),
      { name: "data", type: "blob" },
    ],
    indexes: [{ name: "received_faxes_time", columns: "received_at" }],
  },
  {
    name: "received_events",
    columns: [
      { name: "id", type: "bigserial", primaryKey: true },
      required("fax_id", { references: cascade("received_faxes(id)") }),
      required("at"),
      required("action"),
      text("actor"),
      text("detail"),
    ],
    indexes: [{ name: "received_events_fax", columns: "fax_id, id" }],
  },
  {
    name: "signed_uses",
    columns: [required("message_key"), required("recipient"), required("claim"), required("used_at")],
    primaryKey: "message_key, recipient",
    indexes: [
      { name: "signed_uses_time", columns: "used_at" },
      { name: "signed_uses_claim", columns: "claim" },
    ],
  },
  {
    // the compliance ledger (sql/ledger.ts): append-only, each row chained to the one before
    name: "ledger",
    columns: [integer("seq", { primaryKey: true }), ...ledgerFields(), required("prev_hash"), required("hash")],
    indexes: [
      { name: "ledger_at", columns: "at" },
      { name: "ledger_object", columns: "object_kind, object_id" },
      { name: "ledger_actor", columns: "actor_id", where: "actor_id IS NOT NULL" },
      { name: "ledger_number", columns: "number_hash", where: "number_hash IS NOT NULL" },
    ],
  },
  // retention (issue 56): legal holds, and the service copies to delete (sql/retention-tables.ts)
  {
    name: "legal_holds",
    columns: [
      required("id", { primaryKey: true, notNull: false }),
      required("kind", { check: "kind IN ('user','number','job','received','matter')" }),
      required("value"),
      required("reason"),
      required("held_by"),
      required("held_at"),
      text("released_by"),
      text("released_at"),
    ],
    indexes: [{ name: "legal_holds_active", columns: "kind, value", where: "released_at IS NULL" }],
  },
  {
    name: "service_purges",
    columns: [
      required("message_id", { primaryKey: true, notNull: false }),
      required("user_name"),
      required("object_kind", { check: "object_kind IN ('job','received')" }),
      required("object_id"),
      text("number"),
      required("matters", { default: "'[]'" }),
      required("due_at"),
      required("state", { check: "state IN ('pending','deleting','done','failed')" }),
      counter("attempts"),
      required("next_attempt_at"),
      text("locked_until"),
      text("last_error"),
      counter("alerted"),
      required("created_at"),
      text("done_at"),
    ],
    indexes: [{ name: "service_purges_due", columns: "state, next_attempt_at" }],
  },
  // the fleet's shared state (issue 55, sql/shared-state.ts): console sessions by their id's hash,
  // and rate-limiter-flexible's counters (its own layout: key, points, expiry in ms)
  {
    name: "console_sessions",
    columns: [
      required("id_hash", { primaryKey: true, notNull: false }),
      required("user"),
      integer("admin", { notNull: true }),
      required("csrf_secret"),
      required("csrf_token"),
      required("signed_in_at"),
      required("seen_at"),
    ],
    indexes: [{ name: "console_sessions_user", columns: '"user"' }],
  },
  {
    name: "rate_limits",
    columns: [
      required("key", { primaryKey: true, notNull: false }),
      integer("points", { notNull: true, default: "0" }),
      { name: "expire", type: "bigint" },
    ],
  },
  // STEP (issue 52, branch connectors): connector deliveries of received faxes (sql/delivery-tables.ts);
  // STEP (issue 52, branch connectors2): kind 'graph' added (sql/delivery-kinds.ts)
  {
    name: "deliveries",
    columns: [
      required("id", { unique: true }),
      required("fax_id", { references: cascade("received_faxes(id)") }),
      required("target"),
      required("kind", { check: "kind IN ('fhir','hl7','webdav','smb','graph')" }),
      required("rule"),
      required("owner"),
      required("spec"),
      required("state", { check: "state IN ('pending','delivering','delivered','failed')" }),
      counter("attempts"),
      required("next_attempt_at"),
      text("locked_by"),
      text("locked_until"),
      text("last_error"),
      text("result"),
      required("created_at"),
      text("delivered_at"),
    ],
    primaryKey: "fax_id, target",
    indexes: [{ name: "deliveries_due", columns: "state, next_attempt_at" }],
  },
  // OCR (issue 51): the text of received faxes and its duty (sql/received-text-tables.ts)
  {
    name: "received_text",
    columns: [
      { name: "seq", type: "bigserial", primaryKey: true },
      required("fax_id", { unique: true, references: cascade("received_faxes(id)") }),
      required("user_name"),
      required("state", { check: "state IN ('pending','running','done','unreadable','failed')" }),
      counter("attempts"),
      required("next_attempt_at"),
      text("locked_until"),
      text("last_error"),
      text("body"),
      text("waits_until"),
      required("created_at"),
      text("done_at"),
    ],
    indexes: [
      { name: "received_text_due", columns: "state, next_attempt_at" },
      { name: "received_text_waiting", columns: "waits_until", where: "waits_until IS NOT NULL" },
    ],
    // STEP (issue 51, branch reply7): PostgreSQL's stored words of the text, and their index
    extra: (d) => `${receivedTextWords(d)}${d === "postgres" ? receivedTextStoredWords() : ""}`,
  },
  // STEP (issue 50, branch signin): console sign-in factors (sql/sign-in-factors.ts)
  {
    name: "sign_in_factors",
    columns: [
      required("id", { primaryKey: true, notNull: false }),
      required("user_name"),
      required("kind", { check: "kind IN ('passkey','totp')" }),
      required("name"),
      text("credential_id", { unique: true }),
      text("public_key"),
      counter("counter"),
      text("transports"),
      text("sealed_secret"),
      counter("last_step"),
      required("created_at"),
      text("used_at"),
    ],
    indexes: [{ name: "sign_in_factors_user", columns: "user_name" }],
  },
  // STEP (issue 50, branch directory): SCIM people and groups (sql/directory.ts)
  {
    name: "directory_entries",
    columns: [
      required("kind", { check: "kind IN ('user','group')" }),
      required("id"),
      required("name_key"),
      text("external_id"),
      required("body"),
      integer("version", { notNull: true, default: "1" }),
      required("created_at"),
      required("updated_at"),
    ],
    primaryKey: "kind, id",
    indexes: [{ name: "directory_entries_name", columns: "kind, name_key" }],
  },
  // STEP (issue 55, branch budget): the fleet's shared account budget (sql/fleet-tables.ts)
  {
    name: "fleet_budget",
    columns: [
      required("account", { primaryKey: true, notNull: false }),
      real("next_at", { default: "0" }),
      real("others_next_at", { default: "0" }),
      real("pace", { default: "1" }),
      real("paced_at", { default: "0" }),
      real("closed_until", { default: "0" }),
      required("history_calls", { default: "'[]'" }),
      real("history_closed_until", { default: "0" }),
    ],
  },
  {
    name: "fleet_members",
    columns: [
      required("gateway", { primaryKey: true, notNull: false }),
      required("account"),
      real("seen_until"),
      { name: "busy", type: "integer", notNull: true, default: "0" },
    ],
    indexes: [{ name: "fleet_members_account", columns: "account, seen_until" }],
  },
  // STEP (issue 50, branch keys): keys minted for people, service user mappings (sql/person-keys.ts)
  {
    name: "person_keys",
    columns: [
      required("user_name", { primaryKey: true, notNull: false }),
      text("mapped_user_id"),
      text("key_id"),
      text("service_user_id"),
      text("sealed_token"),
      text("access"),
      text("expires_at"),
      text("minted_at"),
      required("updated_at"),
    ],
  },
  // STEP (issue 50, branch ident3): OIDC sign-ins under way (sql/oidc-pending.ts)
  {
    name: "oidc_pending",
    columns: [required("id_hash", { primaryKey: true, notNull: false }), required("body"), required("expires_at")],
    indexes: [{ name: "oidc_pending_expires", columns: "expires_at" }],
  },
  // STEP (issue 50, branch factors6): second-factor steps under way (sql/factor-pending.ts)
  {
    name: "factor_pending",
    columns: [
      required("id_hash", { primaryKey: true, notNull: false }),
      required("kind", { check: "kind IN ('sign-in','enrol')" }),
      required("user_name"),
      text("via"),
      text("challenge"),
      text("sealed_secret"),
      text("sealed_id_token"),
      required("created_at"),
      required("expires_at"),
    ],
    indexes: [
      { name: "factor_pending_expires", columns: "expires_at" },
      { name: "factor_pending_user", columns: "user_name, kind, created_at" },
    ],
  },
  // the same step: provider sessions' ID tokens, for sign-out (sql/oidc-id-tokens.ts)
  {
    name: "oidc_id_tokens",
    columns: [
      required("session_hash", { primaryKey: true, notNull: false }),
      required("sealed_token"),
      required("expires_at"),
    ],
    indexes: [{ name: "oidc_id_tokens_expires", columns: "expires_at" }],
  },
  // STEP (issue 56, branch ledger7): ledger rows committed, not yet sealed (sql/ledger.ts)
  {
    name: "ledger_pending",
    columns: [{ name: "id", type: "bigserial", primaryKey: true }, ...ledgerFields()],
  },
  // STEP (issue 51, branch sentocr): the text of sent faxes and its duty (sql/sent-text-tables.ts)
  {
    name: "sent_text",
    columns: [
      { name: "seq", type: "bigserial", primaryKey: true },
      required("job_id", { unique: true, references: cascade("jobs(id)") }),
      required("user_name"),
      required("state", { check: "state IN ('pending','running','done','unreadable','failed')" }),
      counter("attempts"),
      required("next_attempt_at"),
      text("locked_until"),
      text("last_error"),
      text("body"),
      required("created_at"),
      text("done_at"),
    ],
    indexes: [
      { name: "sent_text_due", columns: "state, next_attempt_at" },
      { name: "sent_text_user", columns: "user_name, created_at" },
    ],
    extra: sentTextWords,
  },
];

const TYPES: Record<DialectName, Record<ColumnType, string>> = {
  sqlite: {
    text: "TEXT",
    integer: "INTEGER",
    bigint: "BIGINT",
    real: "REAL",
    blob: "BLOB",
    serial: "INTEGER",
    bigserial: "INTEGER",
  },
  postgres: {
    text: "TEXT",
    integer: "INTEGER",
    bigint: "BIGINT",
    real: "DOUBLE PRECISION",
    blob: "BYTEA",
    serial: "SERIAL",
    bigserial: "BIGSERIAL",
  },
};

/** A table's name in `d`. */
export const tableName = (t: Table, d: DialectName): string => (typeof t.name === "string" ? t.name : t.name[d]);

const quote = (name: string): string => (name === "user" ? `"user"` : name);

function columnDdl(c: Column, d: DialectName): string {
  const serial = c.type === "serial" || c.type === "bigserial";
  const parts = [quote(c.name), TYPES[d][c.type]];
  if (c.primaryKey) parts.push(serial && d === "sqlite" ? "PRIMARY KEY AUTOINCREMENT" : "PRIMARY KEY");
  if (c.notNull) parts.push("NOT NULL");
  if (c.unique) parts.push("UNIQUE");
  if (c.default !== undefined) parts.push(`DEFAULT ${c.default}`);
  if (c.check) parts.push(`CHECK (${c.check})`);
  if (c.references) parts.push(`REFERENCES ${c.references}`);
  return parts.join(" ");
}

/** The whole schema as `d`'s DDL, for a database made from nothing. */
export function schemaDdl(d: DialectName): string {
  const mine = <T extends { only?: DialectName }>(xs: readonly T[] = []): T[] =>
    xs.filter((x) => !x.only || x.only === d);
  return TABLES.map((t) => {
    const name = tableName(t, d);
    const lines = [
      ...mine(t.columns).map((c) => columnDdl(c, d)),
      ...(t.primaryKey ? [`PRIMARY KEY (${t.primaryKey})`] : []),
      ...mine(t.checks).map((c) => `CHECK (${c.sql})`),
    ];
    const indexes = mine(t.indexes).map(
      (i) => `CREATE INDEX ${i.name} ON ${name}(${i.columns})${i.where ? ` WHERE ${i.where}` : ""};`,
    );
    return [`CREATE TABLE ${name} (\n  ${lines.join(",\n  ")}\n);`, ...indexes, ...(t.extra ? [t.extra(d)] : [])].join(
      "\n",
    );
  }).join("\n\n");
}
