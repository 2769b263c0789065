// How far text reading (issue 51) is behind, for /metrics: the received and the sent faxes' text
// rows by state, and how long the oldest one still to be read has waited. Its own file, beside
// received-text.ts and sent-text.ts, reading only their tables' state and created_at columns.
import type { Db } from "./db.js";
import { textRowCounts } from "./text-duty.js";

export const TEXT_STATES = ["pending", "running", "done", "unreadable", "failed"] as const;
export type TextBacklogState = (typeof TEXT_STATES)[number];

export interface TextBacklogKind {
  states: Record<TextBacklogState, number>;
  /** Seconds the oldest text still to be read (pending, retrying or running) has waited; null when none. */
  oldestWaitingSeconds: number | null;
}

export type TextBacklog = Record<"received" | "sent", TextBacklogKind>;

const TABLES = { received: "received_text", sent: "sent_text" } as const;

async function backlogOf(db: Db, table: (typeof TABLES)[keyof typeof TABLES]): Promise<TextBacklogKind> {
  const [states, oldest] = await Promise.all([
    textRowCounts(db, table),
    db.get<{ t: string | null }>(`SELECT MIN(created_at) AS t FROM ${table} WHERE state IN ('pending','running')`),
  ]);
  const t = oldest?.t ?? null;
  return { states, oldestWaitingSeconds: t ? Math.max(0, Math.round((db.clock.now() - Date.parse(t)) / 1000)) : null };
}

/** Both kinds' backlog (one scrape's worth of reads). */
export async function textBacklog(db: Db): Promise<TextBacklog> {
  const [received, sent] = await Promise.all([backlogOf(db, TABLES.received), backlogOf(db, TABLES.sent)]);
  return { received, sent };
}
