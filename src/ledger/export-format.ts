// How ledger rows leave the gateway (`faxgate audit export` and the console's export link): one
// serializer, so a row exported from either door is the same bytes.
import type { LedgerRow } from "./events.js";

export type LedgerExportFormat = "jsonl" | "csv";
export const LEDGER_EXPORT_FORMATS: readonly LedgerExportFormat[] = ["jsonl", "csv"];

const CSV_COLUMNS = [
  "seq",
  "at",
  "action",
  "actor_kind",
  "actor_id",
  "object_kind",
  "object_id",
  "door",
  "client",
  "number_hash",
  "detail",
  "prev_hash",
  "hash",
];

/** RFC 4180: quoted when it holds a comma, quote or line break; a leading =+-@ is not a formula. */
function csvField(v: string | number | null): string {
  if (v === null) return "";
  let s = String(v);
  if (/^[=+\-@]/.test(s) && typeof v === "string") s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function csvLine(r: LedgerRow): string {
  return [
    r.seq,
    r.at,
    r.action,
    r.actor.kind,
    r.actor.id ?? null,
    r.object.kind,
    r.object.id,
    r.door,
    r.client,
    r.numberHash,
    JSON.stringify(r.detail),
    r.prevHash,
    r.hash,
  ]
    .map(csvField)
    .join(",");
}

/** What comes before the first row: the CSV header line, nothing for JSON lines. */
export function ledgerExportHeader(format: LedgerExportFormat): string {
  return format === "csv" ? `${CSV_COLUMNS.join(",")}\r\n` : "";
}

/** One row, with its line ending. */
export function ledgerExportLine(format: LedgerExportFormat, r: LedgerRow): string {
  return format === "csv" ? `${csvLine(r)}\r\n` : `${JSON.stringify(r)}\n`;
}
