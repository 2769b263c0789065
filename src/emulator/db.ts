// The emulator's state: one SQLite file (WAL) in the data folder. Fax documents live beside it as
// PDF files; rows keep only their names. Times are epoch milliseconds.
import Database from "better-sqlite3";

export type Db = Database.Database;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (
  uuid TEXT PRIMARY KEY, accountNumber TEXT NOT NULL, accountName TEXT NOT NULL, timezone TEXT NOT NULL,
  faxCsid TEXT NOT NULL, faxCallerId TEXT NOT NULL, supportCode TEXT NOT NULL, createdAt INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
  uuid TEXT PRIMARY KEY, accountId TEXT NOT NULL, email TEXT NOT NULL UNIQUE COLLATE NOCASE,
  firstName TEXT NOT NULL, lastName TEXT, userRole TEXT NOT NULL, phone TEXT NOT NULL,
  faxCsid TEXT NOT NULL, faxCallerId TEXT NOT NULL,
  emailNotifySendOption TEXT NOT NULL, emailNotifySendIncAttachment INTEGER NOT NULL,
  emailNotifyReceiveOption TEXT NOT NULL, emailNotifyReceiveIncAttachment INTEGER NOT NULL,
  emailToFaxCoverPageOption INTEGER NOT NULL, createdAt INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
  uuid TEXT PRIMARY KEY, userId TEXT NOT NULL, accountId TEXT NOT NULL, name TEXT NOT NULL,
  token TEXT NOT NULL UNIQUE, access TEXT NOT NULL, expiresAt INTEGER,
  createdAt INTEGER NOT NULL, updatedAt INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS contacts (
  uuid TEXT PRIMARY KEY, userId TEXT NOT NULL, accountId TEXT NOT NULL, name TEXT NOT NULL,
  email TEXT, faxNumber TEXT, phoneNumber TEXT, isOrganization INTEGER NOT NULL DEFAULT 0,
  organizationId TEXT, isPublic INTEGER NOT NULL DEFAULT 0, publicEditable INTEGER NOT NULL DEFAULT 0,
  createdAt INTEGER NOT NULL, updatedAt INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tags (
  uuid TEXT PRIMARY KEY, accountId TEXT NOT NULL, createdBy TEXT NOT NULL, name TEXT NOT NULL,
  color TEXT NOT NULL, isPublic INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS cover_pages (
  uuid TEXT PRIMARY KEY, accountId TEXT NOT NULL, name TEXT NOT NULL, isDefault INTEGER NOT NULL,
  createdAt INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS faxes (
  messageId TEXT PRIMARY KEY, messageNumber INTEGER NOT NULL UNIQUE, accountId TEXT NOT NULL,
  userId TEXT NOT NULL, direction TEXT NOT NULL, channelType TEXT NOT NULL, faxNumber TEXT NOT NULL,
  faxCallerId TEXT NOT NULL, faxCsid TEXT NOT NULL,
  createdAt INTEGER NOT NULL, scheduledAt INTEGER, readyAt INTEGER NOT NULL, transmitAt INTEGER,
  -- decided at creation from the destination; shown once readyAt has passed
  outcome TEXT NOT NULL, outcomeRule TEXT NOT NULL,
  subject TEXT, recipientName TEXT, senderName TEXT, notes TEXT, coverPage INTEGER NOT NULL DEFAULT 0,
  coverPageId TEXT, cf TEXT NOT NULL DEFAULT '{}', cfText TEXT NOT NULL DEFAULT '',
  tags TEXT NOT NULL DEFAULT '[]', contacts TEXT NOT NULL DEFAULT '[]', attachments TEXT NOT NULL DEFAULT '[]',
  pagesCount INTEGER NOT NULL, pdfFile TEXT NOT NULL, resentFrom TEXT,
  isArchived INTEGER NOT NULL DEFAULT 0, isRead INTEGER NOT NULL DEFAULT 0, deletedAt INTEGER
);
CREATE INDEX IF NOT EXISTS faxes_user_created ON faxes (userId, createdAt);
CREATE INDEX IF NOT EXISTS faxes_account_created ON faxes (accountId, createdAt);
`;

export function openDb(file: string): Db {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.exec(SCHEMA);
  migrate(db);
  return db;
}

/** Columns added after the first release, for data folders made before them. */
function migrate(db: Db): void {
  const faxCols = new Set((db.prepare("PRAGMA table_info(faxes)").all() as Array<{ name: string }>).map((c) => c.name));
  // when a fax goes from processing to transmitting; null (older rows) means no transmitting phase
  if (!faxCols.has("transmitAt")) db.exec("ALTER TABLE faxes ADD COLUMN transmitAt INTEGER");
  // whether the webhooks for the fax's final state were queued (so a restart does not repeat them)
  if (!faxCols.has("notifiedAt")) {
    // faxes finished before webhooks existed raise no events now
    db.exec("ALTER TABLE faxes ADD COLUMN notifiedAt INTEGER; UPDATE faxes SET notifiedAt = readyAt");
  }
  // the service's own purge (issue 56): the file is gone, by a delete or by the account's storeFaxesTime
  if (!faxCols.has("filePurgedAt")) db.exec("ALTER TABLE faxes ADD COLUMN filePurgedAt INTEGER");
  const accountCols = new Set(
    (db.prepare("PRAGMA table_info(accounts)").all() as Array<{ name: string }>).map((c) => c.name),
  );
  // days the service keeps a fax's file (0: for ever), the account's storeFaxesTime
  if (!accountCols.has("storeFaxesTime"))
    db.exec("ALTER TABLE accounts ADD COLUMN storeFaxesTime INTEGER NOT NULL DEFAULT 0");
  // the webhook pass looks for finished faxes not yet notified ten times a second: keep it an index lookup
  db.exec("CREATE INDEX IF NOT EXISTS faxes_unnotified ON faxes (readyAt) WHERE notifiedAt IS NULL");
}

export function getMeta(db: Db, key: string): string | undefined {
  const row = db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined;
  return row?.value;
}

export function setMeta(db: Db, key: string, value: string): void {
  db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(
    key,
    value,
  );
}

export interface AccountRow {
  uuid: string;
  accountNumber: string;
  accountName: string;
  timezone: string;
  faxCsid: string;
  faxCallerId: string;
  supportCode: string;
  createdAt: number;
  storeFaxesTime: number;
}

export interface UserRow {
  uuid: string;
  accountId: string;
  email: string;
  firstName: string;
  lastName: string | null;
  userRole: string;
  phone: string;
  faxCsid: string;
  faxCallerId: string;
  emailNotifySendOption: string;
  emailNotifySendIncAttachment: number;
  emailNotifyReceiveOption: string;
  emailNotifyReceiveIncAttachment: number;
  emailToFaxCoverPageOption: number;
  createdAt: number;
}

export interface KeyRow {
  uuid: string;
  userId: string;
  accountId: string;
  name: string;
  token: string;
  access: "admin" | "base" | "print_driver";
  expiresAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface ContactRow {
  uuid: string;
  userId: string;
  accountId: string;
  name: string;
  email: string | null;
  faxNumber: string | null;
  phoneNumber: string | null;
  isOrganization: number;
  organizationId: string | null;
  isPublic: number;
  publicEditable: number;
  createdAt: number;
  updatedAt: number;
}

export interface TagRow {
  uuid: string;
  accountId: string;
  createdBy: string;
  name: string;
  color: string;
  isPublic: number;
}

export interface CoverPageRow {
  uuid: string;
  accountId: string;
  name: string;
  isDefault: number;
  createdAt: number;
}

export interface FaxRow {
  messageId: string;
  messageNumber: number;
  accountId: string;
  userId: string;
  direction: "inbound" | "outbound";
  channelType: string;
  faxNumber: string;
  faxCallerId: string;
  faxCsid: string;
  createdAt: number;
  scheduledAt: number | null;
  readyAt: number;
  transmitAt: number | null;
  notifiedAt: number | null;
  outcome: string;
  outcomeRule: string;
  subject: string | null;
  recipientName: string | null;
  senderName: string | null;
  notes: string | null;
  coverPage: number;
  coverPageId: string | null;
  cf: string;
  cfText: string;
  tags: string;
  contacts: string;
  attachments: string;
  pagesCount: number;
  pdfFile: string;
  resentFrom: string | null;
  isArchived: number;
  isRead: number;
  deletedAt: number | null;
  filePurgedAt: number | null;
}
