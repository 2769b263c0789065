// Seed data: the account, its users with their preferences, keys and contacts. Applying a seed is
// idempotent: users are matched by e-mail and keys by token, so a restart with the same seed (or
// the sandbox re-seeding from its config) adds only what is new and never undoes later changes.
import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import type { AccessLevel } from "./types.js";
import { getMeta, setMeta, type Db } from "./db.js";

export interface SeedContact {
  uuid?: string;
  name: string;
  email?: string;
  faxNumber?: string;
  phoneNumber?: string;
  isPublic?: boolean;
  publicEditable?: boolean;
  isOrganization?: boolean;
  /** members of an organization */
  contacts?: SeedContact[];
}

export interface SeedKey {
  name: string;
  access: AccessLevel;
  token: string;
  /** ISO date-time */
  expiresAt?: string;
}

export interface SeedUser {
  email: string;
  firstName?: string;
  lastName?: string | null;
  userRole?: string;
  phone?: string;
  faxCsid?: string;
  faxCallerId?: string;
  emailNotifySendOption?: string;
  emailNotifySendIncAttachment?: boolean;
  emailNotifyReceiveOption?: string;
  emailNotifyReceiveIncAttachment?: boolean;
  emailToFaxCoverPageOption?: boolean;
  keys?: SeedKey[];
  contacts?: SeedContact[];
}

export interface SeedTag {
  uuid?: string;
  name: string;
  color?: string;
}

export interface SeedData {
  account?: {
    accountName?: string;
    timezone?: string;
    accountNumber?: string;
    faxCsid?: string;
    faxCallerId?: string;
    /** days the service keeps a fax's file (0 or absent: for ever) */
    storeFaxesTime?: number | string;
  };
  users?: SeedUser[];
  tags?: SeedTag[];
}

export async function loadSeedFile(file: string): Promise<SeedData> {
  const text = await readFile(file, "utf8");
  const data: unknown = file.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  if (!data || typeof data !== "object") throw new Error(`seed file ${file} does not hold an object`);
  return data as SeedData;
}

const ACCESS = new Set(["admin", "base", "print_driver"]);

/** Creates the account on first start and adds what the seed names and the store lacks. */
export function applySeed(db: Db, seed: SeedData | undefined, now: number): string {
  return db.transaction(() => {
    const accountId = ensureAccount(db, seed?.account, now);
    ensureCoverPages(db, accountId, now);
    if (seed?.users?.length) {
      for (const u of seed.users) seedUser(db, accountId, u, now);
    } else if (!getMeta(db, "defaultUsers")) {
      seedUser(
        db,
        accountId,
        {
          email: "admin@localhost",
          firstName: "Emulator",
          lastName: "Admin",
          userRole: "admin",
          keys: [
            { name: "admin", access: "admin", token: `emu-admin-${randomBytes(16).toString("hex")}` },
            { name: "print driver", access: "print_driver", token: `emu-print-${randomBytes(16).toString("hex")}` },
          ],
        },
        now,
      );
      setMeta(db, "defaultUsers", "1");
    }
    const tags = seed?.tags ?? [
      { name: "Billing", color: "2e86de" },
      { name: "Urgent", color: "e74c3c" },
    ];
    const creator = (
      db
        .prepare("SELECT uuid FROM users WHERE accountId = ? ORDER BY (userRole = 'admin') DESC, createdAt LIMIT 1")
        .get(accountId) as { uuid: string }
    ).uuid;
    for (const t of tags) {
      const exists = t.uuid
        ? db.prepare("SELECT 1 FROM tags WHERE uuid = ?").get(t.uuid)
        : db.prepare("SELECT 1 FROM tags WHERE accountId = ? AND name = ?").get(accountId, t.name);
      if (!exists)
        db.prepare(
          "INSERT INTO tags (uuid, accountId, createdBy, name, color, isPublic) VALUES (?, ?, ?, ?, ?, 1)",
        ).run(t.uuid ?? randomUUID(), accountId, creator, t.name, t.color ?? "7f8c8d");
    }
    return accountId;
  })();
}

function ensureAccount(db: Db, a: SeedData["account"], now: number): string {
  const existing = db.prepare("SELECT uuid FROM accounts LIMIT 1").get() as { uuid: string } | undefined;
  if (existing) return existing.uuid;
  const uuid = randomUUID();
  db.prepare(
    "INSERT INTO accounts (uuid, accountNumber, accountName, timezone, faxCsid, faxCallerId, supportCode, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  ).run(
    uuid,
    a?.accountNumber ?? String(100000 + Math.floor(Math.random() * 900000)),
    a?.accountName ?? "Emulator Account",
    a?.timezone ?? "UTC",
    a?.faxCsid ?? "FAXGATE EMU",
    a?.faxCallerId ?? "5550100999",
    randomBytes(3).toString("hex").toUpperCase(),
    now,
  );
  const days = Number(a?.storeFaxesTime ?? 0);
  if (Number.isFinite(days) && days > 0)
    db.prepare("UPDATE accounts SET storeFaxesTime = ? WHERE uuid = ?").run(days, uuid);
  return uuid;
}

function ensureCoverPages(db: Db, accountId: string, now: number): void {
  const n = (db.prepare("SELECT COUNT(*) AS n FROM cover_pages WHERE accountId = ?").get(accountId) as { n: number }).n;
  if (n > 0) return;
  const ins = db.prepare(
    "INSERT INTO cover_pages (uuid, accountId, name, isDefault, createdAt) VALUES (?, ?, ?, ?, ?)",
  );
  ins.run(randomUUID(), accountId, "Standard", 1, now);
  ins.run(randomUUID(), accountId, "Confidential", 0, now);
}

function seedUser(db: Db, accountId: string, u: SeedUser, now: number): void {
  if (!u.email) throw new Error("a seed user has no email");
  let row = db.prepare("SELECT uuid FROM users WHERE email = ?").get(u.email) as { uuid: string } | undefined;
  const isNew = !row;
  if (!row) {
    const uuid = randomUUID();
    db.prepare(`INSERT INTO users (uuid, accountId, email, firstName, lastName, userRole, phone, faxCsid, faxCallerId,
      emailNotifySendOption, emailNotifySendIncAttachment, emailNotifyReceiveOption, emailNotifyReceiveIncAttachment,
      emailToFaxCoverPageOption, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      uuid,
      accountId,
      u.email,
      u.firstName ?? u.email.split("@")[0],
      u.lastName ?? null,
      u.userRole ?? "user",
      u.phone ?? "15550100999",
      u.faxCsid ?? "FAXGATE EMU",
      u.faxCallerId ?? "5550100999",
      u.emailNotifySendOption ?? "All",
      u.emailNotifySendIncAttachment ? 1 : 0,
      u.emailNotifyReceiveOption ?? "All",
      u.emailNotifyReceiveIncAttachment ? 1 : 0,
      u.emailToFaxCoverPageOption ? 1 : 0,
      now,
    );
    row = { uuid };
  }
  for (const k of u.keys ?? []) {
    if (!ACCESS.has(k.access))
      throw new Error(`seed key "${k.name}" of ${u.email} has an unknown access level "${k.access}"`);
    if (!k.token) throw new Error(`seed key "${k.name}" of ${u.email} has no token`);
    if (db.prepare("SELECT 1 FROM api_keys WHERE token = ?").get(k.token)) continue;
    const exp = k.expiresAt ? Date.parse(k.expiresAt) : null;
    if (exp !== null && Number.isNaN(exp)) throw new Error(`seed key "${k.name}" of ${u.email} has a bad expiresAt`);
    db.prepare(
      "INSERT INTO api_keys (uuid, userId, accountId, name, token, access, expiresAt, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(randomUUID(), row.uuid, accountId, k.name ?? "key", k.token, k.access, exp, now, now);
  }
  // Contacts only with a new user: a contact deleted later must not come back on restart.
  if (isNew) for (const c of u.contacts ?? []) seedContact(db, accountId, row.uuid, c, null, now);
}

function seedContact(
  db: Db,
  accountId: string,
  userId: string,
  c: SeedContact,
  organizationId: string | null,
  now: number,
): void {
  const uuid = c.uuid ?? randomUUID();
  const isOrg = c.isOrganization ?? (c.contacts !== undefined && c.contacts.length > 0);
  db.prepare(`INSERT INTO contacts (uuid, userId, accountId, name, email, faxNumber, phoneNumber, isOrganization, organizationId,
    isPublic, publicEditable, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
    uuid,
    userId,
    accountId,
    c.name,
    c.email ?? null,
    c.faxNumber ?? null,
    c.phoneNumber ?? null,
    isOrg ? 1 : 0,
    organizationId,
    c.isPublic ? 1 : 0,
    c.publicEditable ? 1 : 0,
    now,
    now,
  );
  for (const m of c.contacts ?? []) seedContact(db, accountId, userId, m, uuid, now);
}
