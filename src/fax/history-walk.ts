// Walking fax history whichever way the service counts `offset`: the spec says pages, a client
// of the real service reads it as records, and it is not settled. The first walk that needs a
// second page asks for offset=1: records mode answers with the first page shifted by one (rows
// already seen), pages mode with the second page (rows not seen). The answer is remembered per
// client, and every walk drops rows it has already yielded (newest-first lists shift when faxes
// arrive mid-walk).
import type { FaxRecord, HistoryQuery, Page } from "./types.js";

export type OffsetMode = "records" | "pages";

export interface OffsetMemory {
  offsetMode?: OffsetMode;
}

export interface WalkOptions {
  limit: number;
  /** Bound on calls per walk; the walk reports itself incomplete when it stops there. */
  maxPages?: number;
  /** Where the detected mode is kept (the client itself, usually). */
  memory: OffsetMemory;
  /** One history call (through whatever gate the caller uses). */
  page: (q: HistoryQuery) => Promise<Page<FaxRecord>>;
}

export interface WalkResult {
  complete: boolean;
  calls: number;
}

/**
 * Calls `onRows` with each page's new rows until it returns true (found everything), the history
 * ends, or maxPages is reached.
 */
export async function walkHistory(
  query: HistoryQuery,
  opts: WalkOptions,
  onRows: (rows: FaxRecord[]) => boolean | undefined | Promise<boolean | undefined>,
): Promise<WalkResult> {
  const limit = opts.limit;
  const maxPages = opts.maxPages ?? Number.POSITIVE_INFINITY;
  const seen = new Set<string>();
  const start = query.offset ?? 0;
  let calls = 0;
  const fetch = async (offset: number): Promise<Page<FaxRecord>> => {
    calls += 1;
    return opts.page({ ...query, offset, limit });
  };
  const fresh = (rows: FaxRecord[]): FaxRecord[] =>
    rows.filter((r) => {
      if (seen.has(r.messageId)) return false;
      seen.add(r.messageId);
      return true;
    });

  let page = await fetch(start);
  const firstIds = page.rows.map((r) => r.messageId);
  if ((await onRows(fresh(page.rows))) === true) return { complete: true, calls };
  let next: number | null = null;
  for (;;) {
    if (page.rows.length === 0 || page.rows.length < limit) return { complete: true, calls };
    if (calls >= maxPages) return { complete: false, calls };
    if (next === null && !opts.memory.offsetMode && start === 0) {
      // Detect: offset=1 is the first page shifted by one record, or the second page.
      page = await fetch(1);
      const head = page.rows[0]?.messageId;
      opts.memory.offsetMode = head !== undefined && firstIds.slice(0, 3).includes(head) ? "records" : "pages";
      next = opts.memory.offsetMode === "records" ? 1 + page.rows.length : 2;
    } else {
      const mode = opts.memory.offsetMode ?? "records";
      next ??= mode === "records" ? start + page.rows.length : start + 1;
      const at: number = next;
      page = await fetch(at);
      next = mode === "records" ? at + page.rows.length : at + 1;
    }
    const got = fresh(page.rows);
    if ((await onRows(got)) === true) return { complete: true, calls };
    // A full page of nothing new means the list is not moving forward: stop rather than loop.
    if (got.length === 0 && page.rows.length > 0) return { complete: true, calls };
  }
}

const memories = new WeakMap<object, OffsetMemory>();

/** The offset mode remembered for one client (a new client, after a reload, detects it again). */
export function offsetMemoryOf(client: object): OffsetMemory {
  let m = memories.get(client);
  if (!m) {
    m = {};
    memories.set(client, m);
  }
  return m;
}
