// Fax rows and their documents. Every fax owns one PDF file under faxes/, written before its row
// so a row never points at a missing document.
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { copyFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { notFound } from "./api-error.js";
import { isAdmin } from "./auth.js";
import type { Caller, EmulatorContext } from "./context.js";
import type { ContactRow, FaxRow, TagRow, UserRow } from "./db.js";
import { outcomeRuleFor, resultOf } from "./results.js";

export interface NewFax {
  user: UserRow;
  direction: "inbound" | "outbound";
  channelType: string;
  faxNumber: string;
  callerId: string;
  csid: string;
  subject?: string | null;
  recipientName?: string | null;
  senderName?: string | null;
  notes?: string | null;
  coverPage?: boolean;
  coverPageId?: string | null;
  cf?: Record<string, string>;
  tags?: string[];
  contacts?: string[];
  attachments?: string[];
  pagesCount: number;
  scheduledAt?: number | null;
  resentFrom?: string | null;
}

/** Outbound faxes the account already sent to this number (for the busy-once ending). */
function earlierFaxesTo(ctx: EmulatorContext, nf: NewFax): number {
  const row = ctx.db
    .prepare("SELECT COUNT(*) AS n FROM faxes WHERE direction = 'outbound' AND accountId = ? AND faxNumber = ?")
    .get(nf.user.accountId, nf.faxNumber) as { n: number };
  return row.n;
}

/** Stores a document given as bytes or as an existing fax file, then the row. */
export async function insertFax(
  ctx: EmulatorContext,
  nf: NewFax,
  document: { bytes: Uint8Array } | { copyOf: string },
): Promise<FaxRow> {
  const messageId = randomUUID();
  const pdfFile = `${messageId}.pdf`;
  const dest = path.join(ctx.faxDir, pdfFile);
  const tmp = `${dest}.tmp`;
  if ("bytes" in document) await writeFile(tmp, document.bytes, { mode: 0o600 });
  else await copyFile(path.join(ctx.faxDir, document.copyOf), tmp);
  await rename(tmp, dest);

  const now = ctx.clock.now();
  const scheduledAt = nf.scheduledAt && nf.scheduledAt > now ? nf.scheduledAt : null;
  const inbound = nf.direction === "inbound";
  const ending = inbound ? "ok" : outcomeRuleFor(nf.faxNumber);
  const rule = ending === "busyOnce" ? (earlierFaxesTo(ctx, nf) === 0 ? "busy" : "ok") : ending;
  const outcome = resultOf(rule).status;
  const start = scheduledAt ?? now;
  const readyAt = inbound ? now : start + ctx.delayMs;
  const transmitAt = inbound ? now : start + Math.floor(ctx.delayMs / 2);
  const cf = nf.cf ?? {};
  const row = ctx.db.transaction(() => {
    const next = (
      ctx.db.prepare("SELECT COALESCE(MAX(messageNumber), 100000) + 1 AS n FROM faxes").get() as { n: number }
    ).n;
    ctx.db
      .prepare(`INSERT INTO faxes (messageId, messageNumber, accountId, userId, direction, channelType, faxNumber, faxCallerId, faxCsid,
      createdAt, scheduledAt, readyAt, transmitAt, outcome, outcomeRule, subject, recipientName, senderName, notes, coverPage, coverPageId,
      cf, cfText, tags, contacts, attachments, pagesCount, pdfFile, resentFrom)
      VALUES (@messageId, @messageNumber, @accountId, @userId, @direction, @channelType, @faxNumber, @faxCallerId, @faxCsid,
      @createdAt, @scheduledAt, @readyAt, @transmitAt, @outcome, @outcomeRule, @subject, @recipientName, @senderName, @notes, @coverPage, @coverPageId,
      @cf, @cfText, @tags, @contacts, @attachments, @pagesCount, @pdfFile, @resentFrom)`)
      .run({
        messageId,
        messageNumber: next,
        accountId: nf.user.accountId,
        userId: nf.user.uuid,
        direction: nf.direction,
        channelType: nf.channelType,
        faxNumber: nf.faxNumber,
        faxCallerId: nf.callerId,
        faxCsid: nf.csid,
        createdAt: now,
        scheduledAt,
        readyAt,
        transmitAt,
        outcome,
        outcomeRule: rule,
        subject: nf.subject ?? null,
        recipientName: nf.recipientName ?? null,
        senderName: nf.senderName ?? null,
        notes: nf.notes ?? null,
        coverPage: nf.coverPage ? 1 : 0,
        coverPageId: nf.coverPageId ?? null,
        cf: JSON.stringify(cf),
        cfText: Object.values(cf).join("\n"),
        tags: JSON.stringify(nf.tags ?? []),
        contacts: JSON.stringify(nf.contacts ?? []),
        attachments: JSON.stringify(nf.attachments ?? []),
        pagesCount: nf.pagesCount,
        pdfFile,
        resentFrom: nf.resentFrom ?? null,
      });
    return ctx.db.prepare("SELECT * FROM faxes WHERE messageId = ?").get(messageId) as FaxRow;
  })();
  return row;
}

/**
 * A fax the caller may see: its own, or any of the account's for an admin key. Else 404. With
 * `deleted`, a deleted one too (its record answers with deletedAt and isFilePurged, so a caller
 * can check a delete took).
 */
export function visibleFax(
  ctx: EmulatorContext,
  caller: Caller,
  messageId: string,
  opts: { deleted?: boolean } = {},
): FaxRow {
  purgeStored(ctx);
  const row = ctx.db
    .prepare(`SELECT * FROM faxes WHERE messageId = ?${opts.deleted ? "" : " AND deletedAt IS NULL"}`)
    .get(messageId) as FaxRow | undefined;
  if (!row || row.accountId !== caller.user.accountId || (row.userId !== caller.user.uuid && !isAdmin(caller))) {
    throw notFound(`fax ${messageId} not found`);
  }
  return row;
}

export async function deleteFax(ctx: EmulatorContext, row: FaxRow): Promise<void> {
  const now = ctx.clock.now();
  ctx.db.prepare("UPDATE faxes SET deletedAt = ?, filePurgedAt = ? WHERE messageId = ?").run(now, now, row.messageId);
  await rm(path.join(ctx.faxDir, row.pdfFile), { force: true });
}

/**
 * The account's storeFaxesTime, as the service applies it: files of faxes older than that many
 * days are purged (the record stays, isFilePurged true). Looked at whenever a fax is looked up.
 */
export function purgeStored(ctx: EmulatorContext): void {
  const a = ctx.db.prepare("SELECT storeFaxesTime FROM accounts LIMIT 1").get() as
    | { storeFaxesTime: number }
    | undefined;
  const days = a?.storeFaxesTime ?? 0;
  if (days <= 0) return;
  const now = ctx.clock.now();
  const old = ctx.db
    .prepare("SELECT messageId, pdfFile FROM faxes WHERE filePurgedAt IS NULL AND createdAt < ?")
    .all(now - days * 86_400_000) as Array<{ messageId: string; pdfFile: string }>;
  for (const f of old) {
    ctx.db.prepare("UPDATE faxes SET filePurgedAt = ? WHERE messageId = ?").run(now, f.messageId);
    rmSync(path.join(ctx.faxDir, f.pdfFile), { force: true });
  }
}

export function tagsOf(ctx: EmulatorContext, row: FaxRow): TagRow[] {
  const ids = JSON.parse(row.tags) as string[];
  if (ids.length === 0) return [];
  return ids
    .map((id) => ctx.db.prepare("SELECT * FROM tags WHERE uuid = ?").get(id) as TagRow | undefined)
    .filter((t): t is TagRow => !!t);
}

export function contactsOf(ctx: EmulatorContext, row: FaxRow): ContactRow[] {
  const ids = JSON.parse(row.contacts) as string[];
  return ids
    .map((id) => ctx.db.prepare("SELECT * FROM contacts WHERE uuid = ?").get(id) as ContactRow | undefined)
    .filter((c): c is ContactRow => !!c);
}
