// The ledger's search filters as people type them (`faxgate audit export` options, the console's
// ledger page): one reading of a time and of an object reference for both doors.
import type { LedgerObject } from "./events.js";

export const LEDGER_OBJECT_KINDS: ReadonlyArray<LedgerObject["kind"]> = [
  "job",
  "recipient",
  "received",
  "person",
  "hold",
  "config",
];

/** An ISO 8601 date or date-time (2026-12-31, 2026-12-31T23:59:00Z) as an ISO time in UTC; null if it is none. */
export function parseIsoTime(v: string): string | null {
  const t = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v.trim())
    ? Date.parse(v.trim())
    : Number.NaN;
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

/** KIND:ID, e.g. job:J123 or received:R9; null for anything else. */
export function parseObjectRef(v: string): LedgerObject | null {
  const i = v.indexOf(":");
  const kind = i > 0 ? v.slice(0, i) : "";
  const id = i > 0 ? v.slice(i + 1) : "";
  if (!(LEDGER_OBJECT_KINDS as readonly string[]).includes(kind) || id === "") return null;
  return { kind: kind as LedgerObject["kind"], id };
}
