// The transition table (transitions.ts) as SQL, for either backend: the guard of a step (the
// states it may start from, the parked and placeholder rules) and its SET list, rendered once per
// dialect. The dialects differ only in placeholders (`?` or `$n`), the larger-of function and a
// cast PostgreSQL needs to type a parameter that may be NULL.
import type { DeferOptions, FaxResultFields } from "./queue-store.js";
import {
  AWAITS_CONFIRMATION,
  PARKED,
  type RecipientColumn,
  UNCONFIRMED,
  TRANSITIONS,
  type Transition,
  type TransitionName,
} from "./transitions.js";

export interface Dialect {
  /** Tells the dialects apart in renderSet's cache. */
  name: string;
  /** The placeholder of the n-th parameter (from 1). */
  param(n: number): string;
  /** A parameter written to an INTEGER column, typed where the dialect needs it. */
  integer(param: string): string;
  greatest: string;
}

export const SQLITE: Dialect = { name: "sqlite", param: () => "?", integer: (p) => p, greatest: "MAX" };
export const POSTGRES: Dialect = {
  name: "postgres",
  param: (n) => `$${n}`,
  integer: (p) => `${p}::int`,
  greatest: "GREATEST",
};
/** PostgreSQL's text with `?` placeholders, for the query layer (sql/db.ts numbers them). */
export const POSTGRES_Q: Dialect = { ...POSTGRES, name: "postgres?", param: () => "?" };

const INTEGER_COLUMNS: ReadonlySet<RecipientColumn> = new Set(["pages", "pages_count", "duration", "fax_attempt"]);

/** The caller's values of a step, by column (`now` columns and updated_at the store fills). */
export type StepValues = Partial<Record<RecipientColumn, unknown>>;

export interface RenderedSet {
  /** `state = 'to', col = ..., updated_at = <param>` */
  sql: string;
  /** How many parameters `sql` takes (the next one is numbered count + first). */
  count: number;
  /** The parameters in order: the caller's values, `now` where the table says now. */
  args(values: StepValues, now: string): unknown[];
}

const NOW = Symbol("now");
const rendered = new Map<string, RenderedSet>();

/**
 * Transition `name`'s SET list in `dialect`, numbering its parameters from `first`; `alias`
 * qualifies the columns read on the right-hand side (an UPDATE ... FROM that joins the table).
 */
export function renderSet(
  name: TransitionName,
  dialect: Dialect,
  opts: { first?: number; alias?: string } = {},
): RenderedSet {
  const key = `${name}|${dialect.name}|${opts.first ?? 1}|${opts.alias ?? ""}`;
  const cached = rendered.get(key);
  if (cached) return cached;
  const t: Transition = TRANSITIONS[name];
  const first = opts.first ?? 1;
  const old = (c: string): string => (opts.alias ? `${opts.alias}.${c}` : c);
  const params: Array<{ column: RecipientColumn; number: boolean } | typeof NOW> = [];
  const param = (p: (typeof params)[number]): string => dialect.param(first + params.push(p) - 1);
  const parts = [`state = '${t.to}'`];
  for (const [c, write] of Object.entries(t.sets) as Array<[RecipientColumn, string]>) {
    const given = { column: c, number: false };
    const counted = { column: c, number: true };
    if (write === "given") parts.push(`${c} = ${param(given)}`);
    else if (write === "clear") parts.push(`${c} = NULL`);
    else if (write === "zero") parts.push(`${c} = 0`);
    else if (write === "now") parts.push(`${c} = ${param(NOW)}`);
    else if (write === "increment") parts.push(`${c} = ${old(c)} + 1`);
    else if (write === "add") parts.push(`${c} = ${old(c)} + ${param(counted)}`);
    else if (write === "refund") parts.push(`${c} = ${dialect.greatest}(0, ${old(c)} - ${param(counted)})`);
    else {
      const p = param(given);
      parts.push(`${c} = COALESCE(${INTEGER_COLUMNS.has(c) ? dialect.integer(p) : p}, ${old(c)})`);
    }
  }
  parts.push(`updated_at = ${param(NOW)}`);
  const out: RenderedSet = {
    sql: parts.join(", "),
    count: params.length,
    args: (values, now) => params.map((p) => (p === NOW ? now : (values[p.column] ?? (p.number ? 0 : null)))),
  };
  rendered.set(key, out);
  return out;
}

/** What the fax service reported, as the columns `fail`, `deliver`, `accept` and `progress` write. */
export function resultValues(f: FaxResultFields): StepValues {
  return {
    message_id: f.messageId ?? null,
    result_code: f.resultCode ?? null,
    result_info: f.resultInfo ?? null,
    error_code: f.errorCode ?? null,
    error_info: f.errorInfo ?? null,
    pages: f.pagesComplete ?? null,
    pages_count: f.pagesCount ?? null,
    duration: f.duration ?? null,
    fax_attempt: f.faxAttempt ?? null,
  };
}

/** The columns `defer` writes, from the caller's options. */
export function deferValues(opts: DeferOptions): StepValues {
  return {
    next_attempt_at: opts.nextAttemptAt.toISOString(),
    last_error: opts.error,
    fax_tries: opts.faxTry ? 1 : 0,
    attempts: opts.refundAttempt ? 1 : 0,
  };
}

/** Whether a progress report says something the row does not already hold (else no step). */
export function progressChanged(
  row: { pages: number | null; pages_count: number | null; fax_attempt: number | null },
  f: FaxResultFields,
): boolean {
  const same =
    (f.pagesComplete == null || f.pagesComplete === row.pages) &&
    (f.pagesCount == null || f.pagesCount === row.pages_count) &&
    (f.faxAttempt == null || f.faxAttempt === row.fax_attempt);
  return !same;
}

/** The event detail of a progress step: "page 2 of 5, attempt 1", or null when nothing is known. */
export function progressDetail(pages: number | null, count: number | null, attempt: number | null): string | null {
  return (
    [
      pages !== null ? `page ${pages}${count !== null ? ` of ${count}` : ""}` : null,
      attempt !== null ? `attempt ${attempt}` : null,
    ]
      .filter(Boolean)
      .join(", ") || null
  );
}

/**
 * The rest of transition `name`'s guard, as SQL for either backend: where the table says so, an
 * `unknown` row qualifies only when it is parked, a placeholder (number '') only for the
 * transitions made for it, and a recipient that waits (or waited) for its owner's confirmation
 * only for `confirm` and `unconfirmed`. Empty for the other transitions.
 */
export function sqlParkedGuard(
  name: TransitionName,
  state = "state",
  lastError = "last_error",
  number = "number",
): string {
  const t: Transition = TRANSITIONS[name];
  return (
    (t.unknownIfParked ? ` AND (${state} <> 'unknown' OR ${lastError} LIKE '${PARKED}:%')` : "") +
    (t.numbered ? ` AND ${number} <> ''` : "") +
    (t.placeholder ? ` AND ${number} = ''` : "") +
    (t.confirming === "only" ? ` AND ${lastError} LIKE '${AWAITS_CONFIRMATION}%'` : "") +
    (t.confirming === "never"
      ? ` AND (${lastError} IS NULL OR (${lastError} NOT LIKE '${AWAITS_CONFIRMATION}%' AND ${lastError} NOT LIKE '${UNCONFIRMED}%'))`
      : "")
  );
}

/** SQL text `'a','b'` for a guard built from the table (state names are fixed words, never input). */
export function sqlStateList(states: readonly string[]): string {
  return states.map((s) => `'${s}'`).join(",");
}
