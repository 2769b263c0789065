// How far a user's inbound history has been read. History comes newest first; the cursor holds
// the newest creation time already handled and the ids handled at exactly that time (two faxes
// can share a millisecond). A fax still being received keeps the cursor behind it, so it is
// picked up once it is final. Reading past the cursor is harmless: the notification's dedupe key
// makes a second enqueue of the same fax a no-op.
import type { FaxRecord } from "../fax/index.js";

export interface InboundCursor {
  /** ms since the epoch */
  t: number;
  ids: string[];
}

/** Statuses after which a received fax does not change any more. */
const FINAL = new Set(["success", "failed", "cancelled"]);
/** A reception still "processing" after this long is taken as stuck and no longer holds the cursor. */
const STUCK_MS = 24 * 3_600_000;

export function isFinalStatus(status: string | undefined): boolean {
  return FINAL.has(String(status ?? "").toLowerCase());
}

export function parseCursor(raw: string | null): InboundCursor | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as InboundCursor;
    if (typeof v.t === "number" && Array.isArray(v.ids))
      return { t: v.t, ids: v.ids.filter((x) => typeof x === "string") };
  } catch {
    // a damaged cursor reads as none: the first-start rule applies again (no backlog flood)
  }
  return null;
}

export function serializeCursor(c: InboundCursor): string {
  return JSON.stringify(c);
}

function createdAt(r: FaxRecord): number | null {
  const t = r.createdAt ? Date.parse(r.createdAt) : NaN;
  return Number.isNaN(t) ? null : t;
}

/** Older than the cursor: history is newest first, so reading can stop here. */
export function isBehind(r: FaxRecord, c: InboundCursor): boolean {
  const t = createdAt(r);
  return t !== null && t < c.t;
}

/** Already handled (at the cursor's own time). */
export function isSeen(r: FaxRecord, c: InboundCursor): boolean {
  return createdAt(r) === c.t && c.ids.includes(r.messageId);
}

/**
 * The cursor after handling `fresh` (the records newer than `prev`, newest first). With `all`,
 * everything read counts as handled, final or not (first start without the backlog).
 */
export function advanceCursor(prev: InboundCursor | null, fresh: FaxRecord[], now: number, all = false): InboundCursor {
  const dated = fresh.filter((r) => createdAt(r) !== null);
  const pending = all ? [] : dated.filter((r) => !isFinalStatus(r.status) && now - createdAt(r)! < STUCK_MS);
  let t: number;
  if (pending.length) {
    // stay just behind the oldest reception still in progress
    t = Math.min(...pending.map((r) => createdAt(r)!)) - 1;
  } else if (dated.length) {
    t = Math.max(...dated.map((r) => createdAt(r)!));
  } else {
    return prev ?? { t: 0, ids: [] };
  }
  if (prev && t < prev.t) return prev;
  const handled = dated.filter((r) => createdAt(r) === t && (all || isFinalStatus(r.status))).map((r) => r.messageId);
  const keep = prev && prev.t === t ? prev.ids : [];
  return { t, ids: [...new Set([...keep, ...handled])] };
}
