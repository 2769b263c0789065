// Who may put a file in a person's folder: the folder says whose fax it is, so a file counts only
// when that person wrote it (one of the local accounts mapped to them) or faxgate itself did (the
// CUPS backend writes each authenticated job as the folder's owner). The folders are shared with
// a group, so anyone in it could otherwise fax on someone else's key; this check fails closed.
import { execFile } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import type { UserConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import { folderName } from "./folders.js";

export interface LocalAccount {
  name: string;
  uid: number;
}

export interface Writers {
  user: string;
  /** faxgate's own uid: the CUPS backend's writes and anything faxgate moves */
  self: number;
  accounts: LocalAccount[];
  /** where the accounts came from: users[].localAccounts, or the folder's name by default */
  source: "configured" | "default";
  /** configured names that no account answers to (nothing is taken from them) */
  missing: string[];
}

/** One passwd entry by name or uid: `getent passwd` (NSS: LDAP, SSSD, winbind), /etc/passwd without getent. */
export async function lookupAccount(key: string | number): Promise<LocalAccount | null> {
  const k = String(key);
  const line = await new Promise<string | null>((resolve, reject) => {
    execFile("getent", ["passwd", "--", k], { timeout: 10_000 }, (err, stdout) => {
      if (!err) return resolve(stdout.split("\n")[0] ?? "");
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return resolve(null); // no getent: read the file below
      if ((err as { code?: unknown }).code === 2) return resolve(""); // not found
      reject(new FaxgateError("INTERNAL", `getent passwd ${k} failed: ${err.message}`, { cause: err }));
    });
  });
  const entry =
    line ??
    (await readFile("/etc/passwd", "utf8"))
      .split("\n")
      .find((l) => l.split(":")[typeof key === "number" ? 2 : 0] === k) ??
    "";
  const [name, , uid] = entry.split(":");
  if (!name || uid === undefined || !/^\d+$/.test(uid)) return null;
  return { name, uid: Number(uid) };
}

/** The accounts mapped to a person: users[].localAccounts, or the account named as their folder. */
export async function resolveWriters(user: UserConfig, self = process.geteuid?.() ?? 0): Promise<Writers> {
  const configured = user.localAccounts;
  const names = configured ?? [folderName(user)];
  const accounts: LocalAccount[] = [];
  const missing: string[] = [];
  for (const n of names) {
    const a = await lookupAccount(n);
    if (a) accounts.push(a);
    else if (configured) missing.push(n);
  }
  return { user: user.name, self, accounts, source: configured ? "configured" : "default", missing };
}

/** In a few words, for config check and doctor: who may drop files for this person. */
export function describeWriters(w: Writers): string {
  const who = w.accounts.map((a) => `${a.name} (uid ${a.uid})`).join(", ");
  if (w.source === "configured")
    return (
      (who ? `files written by ${who} or by faxgate` : "only files written by faxgate (no listed account exists)") +
      (w.missing.length ? `; no such account: ${w.missing.join(", ")}` : "")
    );
  return who
    ? `files written by ${who} (the account named as the folder) or by faxgate`
    : "only files written by faxgate (no local account is named as the folder; set users[].localAccounts)";
}

/**
 * Refuses (FOREIGN_WRITER) a file the person did not write. `uid` is the owner of the file as
 * opened (fstat), so the file judged is the file read; `folderOwner` the owner of the person's
 * folder, as which the CUPS backend writes the jobs it authenticated.
 */
export async function checkWriter(w: Writers, uid: number, folderOwner?: number): Promise<void> {
  if (uid === w.self || uid === folderOwner || w.accounts.some((a) => a.uid === uid)) return;
  const writer = await lookupAccount(uid).catch(() => null);
  const by = writer ? `the local account ${writer.name} (uid ${uid})` : `uid ${uid}, which no local account has`;
  throw new FaxgateError(
    "FOREIGN_WRITER",
    `written by ${by}, not by ${w.user}: faxgate faxes a file only on the account of the person who wrote it`,
  );
}

export interface WriterNote {
  user: string;
  /** who may drop files for the user, in words */
  detail: string;
  /** a warning: a configured account is missing, or a shared folder has no account mapped */
  warn: boolean;
}

/**
 * For config check and doctor: each user's writers, and a warning where a folder the group can
 * write has no account mapped (the group's members' files would all be refused, or a mapping was forgotten).
 */
export async function spoolWriterNotes(spoolRoot: string, users: UserConfig[]): Promise<WriterNote[]> {
  const notes: WriterNote[] = [];
  for (const u of users) {
    const w = await resolveWriters(u);
    let detail = describeWriters(w);
    let warn = w.missing.length > 0;
    const folder = path.join(spoolRoot, folderName(u));
    const mode = await stat(folder).then(
      (st) => st.mode & 0o777,
      () => null,
    );
    if (mode !== null && mode & 0o020 && w.accounts.length === 0) {
      warn = true;
      detail += `; ${folder} is group-writable (${mode.toString(8).padStart(4, "0")}) but no local account is mapped to ${u.name}: files the group's members write there are refused. Set users[].localAccounts, or remove the group's write if only CUPS prints there`;
    }
    notes.push({ user: u.name, detail, warn });
  }
  return notes;
}
