// The replay record of signed mail (mail-auth/replay.ts): which signed message was used for which
// fax number, so that a copy of a signed mail is faxed once, never again. One table and one
// operation for both backends, their dialects side by side. Rows are forgotten once a copy could
// no longer pass the freshness check anyway (purgeBefore).
/** A dialect's placeholders (transition-sql.ts SQLITE or POSTGRES fit). */
interface Placeholders {
  param(n: number): string;
}

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

/** The statements of one claim, in `d`'s placeholders: run in order inside one transaction. */
export function signedUseSql(d: Placeholders, use: SignedUse, now: string) {
  const whole = use.recipients.includes(WHOLE_MESSAGE);
  const rcpts = whole ? [] : use.recipients;
  // numbered in the order they appear in the text: SQLite's `?` are taken in that order
  const rcptParams = rcpts.map((_, i) => d.param(i + 3));
  const keyParams = use.keys.map((_, i) => d.param(i + 3 + rcpts.length));
  return {
    purge: { text: `DELETE FROM signed_uses WHERE used_at < ${d.param(1)}`, args: [use.purgeBefore.toISOString()] },
    // another claimant's use of one of these keys for one of these numbers, or of the whole message
    conflict: {
      text: `SELECT recipient, used_at FROM signed_uses
        WHERE claim <> ${d.param(1)}
          AND (recipient = ${d.param(2)} OR ${whole ? "1 = 1" : `recipient IN (${rcptParams.join(", ")})`})
          AND message_key IN (${keyParams.join(", ")})
        ORDER BY used_at LIMIT 1`,
      args: [use.claim, WHOLE_MESSAGE, ...rcpts, ...use.keys],
    },
    inserts: use.keys.flatMap((key) =>
      use.recipients.map((recipient) => ({
        text: `INSERT INTO signed_uses (message_key, recipient, claim, used_at) VALUES (${d.param(1)}, ${d.param(2)}, ${d.param(3)}, ${d.param(4)})
          ON CONFLICT (message_key, recipient) DO NOTHING`,
        args: [key, recipient, use.claim, now],
      })),
    ),
  };
}

/** A claim given back: the message's job was not made, so its sender may send it again. */
export function releaseSql(d: Placeholders, claim: string) {
  return { text: `DELETE FROM signed_uses WHERE claim = ${d.param(1)}`, args: [claim] };
}
