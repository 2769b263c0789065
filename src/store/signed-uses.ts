// The replay record of signed mail (mail-auth/replay.ts): which signed message was used for which
// fax number, so that a copy of a signed mail is faxed once, never again. One table and one
// operation for both backends, their dialects side by side. Rows are forgotten once a copy could
// no longer pass the freshness check anyway (purgeBefore).
import { type Db, marks, nowIso } from "./sql/db.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped: never edit. */
export function signedUsesTable(): string {
  return `
  CREATE TABLE signed_uses (
    message_key TEXT NOT NULL,
    recipient TEXT NOT NULL,
    claim TEXT NOT NULL,
    used_at TEXT NOT NULL,
    PRIMARY KEY (message_key, recipient)
  );
  CREATE INDEX signed_uses_time ON signed_uses(used_at);
  CREATE INDEX signed_uses_claim ON signed_uses(claim);
  `;
}

/** The recipient of a use that takes the whole message (a mailbox message: one delivery, all its numbers). */
export const WHOLE_MESSAGE = "*";

export interface SignedUse {
  /** the message's replay keys: each aligned signature that verified, its signed Message-ID */
  keys: string[];
  /** the fax numbers it is used for now, or [WHOLE_MESSAGE] */
  recipients: string[];
  /** who uses it: the same claimant may claim again (a mailbox message found again after a crash) */
  claim: string;
  /** rows older than this are forgotten first */
  purgeBefore: Date;
}

export type SignedUseAnswer = { ok: true } | { ok: false; usedAt: string; recipient: string };

/** Records the use, unless another claimant used the message for one of these numbers (see QueueStore). */
export function useSignedMessage(db: Db, use: SignedUse): Promise<SignedUseAnswer> {
  const whole = use.recipients.includes(WHOLE_MESSAGE);
  const rcpts = whole ? [] : use.recipients;
  const now = nowIso(db);
  return db.tx("record a signed message's use", async (t) => {
    // one lock per key, in one order: the check and the insert of two gateways cannot interleave
    for (const key of [...use.keys].sort()) await t.lock(`signed:${key}`);
    await t.run("DELETE FROM signed_uses WHERE used_at < ?", [use.purgeBefore.toISOString()]);
    // another claimant's use of one of these keys for one of these numbers, or of the whole message
    const used = await t.get<{ recipient: string; used_at: string }>(
      `SELECT recipient, used_at FROM signed_uses
        WHERE claim <> ?
          AND (recipient = ? OR ${whole ? "1 = 1" : `recipient IN (${marks(rcpts.length)})`})
          AND message_key IN (${marks(use.keys.length)})
        ORDER BY used_at LIMIT 1`,
      [use.claim, WHOLE_MESSAGE, ...rcpts, ...use.keys],
    );
    if (used) return { ok: false, usedAt: used.used_at, recipient: used.recipient };
    for (const key of use.keys)
      for (const recipient of use.recipients)
        await t.run(
          `INSERT INTO signed_uses (message_key, recipient, claim, used_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (message_key, recipient) DO NOTHING`,
          [key, recipient, use.claim, now],
        );
    return { ok: true };
  });
}

/** A claim given back: the message's job was not made, so its sender may send it again. */
export async function releaseSignedMessage(db: Db, claim: string): Promise<void> {
  await db.run("DELETE FROM signed_uses WHERE claim = ?", [claim]);
}
