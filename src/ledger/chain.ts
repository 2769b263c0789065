// How a ledger row is sealed and how the chain is checked. A row's hash is SHA-256 over one
// canonical encoding of its fields and the hash of the row before (a JSON array in a fixed order:
// no field can run into the next), so an edited, deleted, inserted or reordered row breaks the
// chain at that row; a full rewrite of the table is caught only by an anchor kept elsewhere.
import { type LedgerRecord, sealRow } from "../store/index.js";

// The seal itself is the store's (one function for SqlLedger and the intake thread's commit).
export { canonicalRow, sealRow } from "../store/index.js";

/** A detail object as stored: keys sorted, so the same detail is always the same text. */
export function canonicalDetail(detail: Readonly<Record<string, string | number | boolean>> = {}): string {
  const sorted: Record<string, string | number | boolean> = {};
  for (const k of Object.keys(detail).sort()) sorted[k] = detail[k]!;
  return JSON.stringify(sorted);
}

/** Where the chain breaks first, in words an operator can act on. */
export interface ChainBreak {
  seq: number;
  reason: string;
}

/**
 * Walks rows in seq order, page by page: `expect` is where the previous page left off. Returns the
 * first break, or the state to carry into the next page.
 */
export function checkRows(
  rows: readonly LedgerRecord[],
  expect: { seq: number; prevHash: string },
): { broken: ChainBreak } | { next: { seq: number; prevHash: string } } {
  let { seq, prevHash } = expect;
  for (const r of rows) {
    if (r.seq !== seq)
      return {
        broken: {
          seq,
          reason:
            r.seq > seq
              ? `row ${seq} is missing (the chain goes from ${seq - 1} to ${r.seq}): deleted`
              : `row ${r.seq} is out of place (a chain starts at 1 and counts up): inserted`,
        },
      };
    if (r.prev_hash !== prevHash)
      return {
        broken: {
          seq,
          reason: `row ${seq} does not follow row ${seq - 1} (its prevHash is not that row's hash): inserted, reordered, or row ${seq - 1} was replaced`,
        },
      };
    if (sealRow(r) !== r.hash)
      return {
        broken: { seq, reason: `row ${seq} was changed after it was written (its hash does not match its fields)` },
      };
    seq += 1;
    prevHash = r.hash;
  }
  return { next: { seq, prevHash } };
}
