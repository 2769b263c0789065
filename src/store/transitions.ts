// A recipient's life as one table: every change of state the queue makes, by name, with the
// states it may start from, the state it ends in and the columns it writes. Both store backends
// render their guards (`state IN (...)`) and their UPDATE's SET list from this table
// (transition-sql.ts) and write a JobEvent for each step; a new state or step is an edit here
// plus a schema step per backend.
import type { RecipientRow } from "./rows.js";
import { type JobSource, type JobState, type RecipientState, SOURCE_WORDS } from "./types.js";

/**
 * How a step writes one column: `given` the caller's value, `clear` NULL, `zero` 0, `now` the
 * store's clock, `ifGiven` the caller's value when it has one (the old one otherwise), `add` the
 * caller's number added, `increment` one added, `refund` the caller's number taken off (never
 * below 0). Every step also sets `state` to its `to` and `updated_at` to now.
 */
export type ColumnWrite = "given" | "clear" | "zero" | "now" | "ifGiven" | "add" | "increment" | "refund";
export type RecipientColumn = Exclude<keyof RecipientRow, "job_id" | "idx" | "state" | "updated_at">;

export interface Transition {
  from: readonly RecipientState[];
  to: RecipientState;
  /** The columns the step writes besides state and updated_at, in the order the SQL lists them. */
  sets: Readonly<Partial<Record<RecipientColumn, ColumnWrite>>>;
  /** What the step means, for the docs and the console's timeline. */
  says: string;
  /** From `unknown` only a parked send (lastError "parked: ..."), never one still being looked up. */
  unknownIfParked?: true;
  /** Only a recipient with a number: never the placeholder of a job that waits for an address. */
  numbered?: true;
  /** Only the placeholder of a job that waits for an address (number '', lastError NEEDS_ADDRESS). */
  placeholder?: true;
  /**
   * `only`: just a recipient that waits for its owner's confirmation (lastError AWAITS_CONFIRMATION);
   * `never`: never one that waits or waited for it (an operator may not confirm in the owner's place).
   */
  confirming?: "only" | "never";
}

/** The lease goes with the step: nothing holds the row any more. */
const UNLOCK = { locked_by: "clear", locked_until: "clear" } as const;
/** What the fax service reported about a send, kept unless the report leaves it out. */
const PAGES = { pages: "ifGiven", pages_count: "ifGiven", duration: "ifGiven", fax_attempt: "ifGiven" } as const;

/**
 * The lastError prefix of a send the gateway gave up guessing about (dispatch/track.ts park()):
 * it is never sent again by itself, only by an operator's retry, and an operator may cancel it.
 */
export const PARKED = "parked";

/**
 * A print job with no destination waits for its owner to give one (console, src/web/addressing.ts):
 * its one recipient is a placeholder, number '' and this lastError, held until `address` gives it
 * numbers or `unaddressed` ends it after spool.addressWait. Nothing sends or releases it.
 */
export const NEEDS_ADDRESS = "needs an address";

/**
 * Mail whose numbers its signature did not prove, to a number its user never faxed before
 * (smtp.senderAuth.confirmNewDestinations, intake/confirm-new.ts), waits for its owner to confirm
 * it in the console: every recipient of the job is held with a lastError of this prefix (the
 * new numbers with CONFIRM_NEW_NUMBER), until `confirm` queues them or `unconfirmed` ends them
 * after smtp.senderAuth.confirmWait. Nothing sends or releases them; an operator cannot.
 */
export const AWAITS_CONFIRMATION = "waits for its owner to confirm";
export const CONFIRM_NEW_NUMBER = `${AWAITS_CONFIRMATION} this new number in the console`;
export const CONFIRM_WITH_NEW = `${AWAITS_CONFIRMATION} a new number of the same fax in the console`;
/** A held recipient's lastError in a job that waits for confirmation of `newNumbers`. */
export function confirmationWait(newNumbers: readonly string[], number: string): string {
  return newNumbers.includes(number) ? CONFIRM_NEW_NUMBER : CONFIRM_WITH_NEW;
}
/** The lastError prefix of a recipient that `unconfirmed` ended. */
export const UNCONFIRMED = "not confirmed by its owner";

/** The enqueue event's detail in the job's timeline (both backends say the same). */
export function enqueueDetail(source: JobSource, waitingForAddress: boolean, confirming = false): string {
  if (confirming) return `from ${SOURCE_WORDS[source]}; ${AWAITS_CONFIRMATION} a new number`;
  return waitingForAddress ? `from ${SOURCE_WORDS[source]}; ${NEEDS_ADDRESS}` : `from ${SOURCE_WORDS[source]}`;
}

/** Why an operator's retry or cancel moved nothing (both backends say the same). */
export const RETRY_REFUSAL = "only failed, cancelled or parked recipients can be retried";
export const CANCEL_REFUSAL =
  "only queued, deferred, held or parked recipients can be cancelled (in-flight faxes finish)";

export const TRANSITIONS = {
  claim: {
    from: ["queued", "deferred"],
    to: "sending",
    sets: {
      send_id: "given",
      locked_by: "given",
      locked_until: "given",
      attempts: "increment",
      sent_at: "now",
      message_id: "clear",
      last_error: "clear",
      call_left: "zero",
    },
    says: "claimed by a gateway to be sent",
  },
  /**
   * A lease ran out (or the gateway stopped) before the send's call left (call_left 0): the
   * service never saw it, so it goes back to the queue, due now, instead of being looked up.
   */
  unclaim: {
    from: ["sending"],
    to: "deferred",
    sets: { ...UNLOCK, next_attempt_at: "now", last_error: "given", attempts: "refund", call_left: "clear" },
    says: "the gateway stopped before the send left; queued again",
  },
  /** A lease ran out (or the gateway stopped) during a send: it may have reached the service. */
  expire: {
    from: ["sending"],
    to: "unknown",
    sets: { ...UNLOCK, next_attempt_at: "clear", last_error: "given" },
    says: "the send was interrupted; its outcome is being looked up",
  },
  accept: {
    from: ["sending", "unknown"],
    to: "processing",
    sets: {
      message_id: "given",
      ...UNLOCK,
      next_attempt_at: "clear",
      last_error: "clear",
      pages: "ifGiven",
      pages_count: "ifGiven",
      api_calls: "add",
    },
    says: "accepted by the fax service",
  },
  lose: {
    from: ["sending", "unknown"],
    to: "unknown",
    sets: { ...UNLOCK, next_attempt_at: "clear", last_error: "given" },
    says: "the answer to the send was lost; it is being looked up",
  },
  postpone: {
    from: ["unknown"],
    to: "unknown",
    sets: { next_attempt_at: "given", last_error: "given" },
    says: "the lookup will be tried again",
  },
  defer: {
    from: ["sending", "unknown", "processing"],
    to: "deferred",
    sets: { next_attempt_at: "given", last_error: "given", ...UNLOCK, fax_tries: "add", attempts: "refund" },
    says: "will be tried again",
  },
  fail: {
    from: ["sending", "unknown", "processing", "deferred", "queued"],
    to: "failed",
    sets: {
      last_error: "given",
      ...UNLOCK,
      next_attempt_at: "clear",
      result_code: "ifGiven",
      result_info: "ifGiven",
      error_code: "ifGiven",
      error_info: "ifGiven",
      ...PAGES,
      finished_at: "now",
    },
    says: "failed",
  },
  deliver: {
    from: ["processing", "unknown", "sending"],
    to: "delivered",
    sets: {
      last_error: "clear",
      ...UNLOCK,
      next_attempt_at: "clear",
      message_id: "ifGiven",
      result_code: "given",
      result_info: "given",
      error_code: "given",
      error_info: "given",
      ...PAGES,
      finished_at: "now",
    },
    says: "delivered",
  },
  progress: {
    from: ["processing"],
    to: "processing",
    sets: { pages: "ifGiven", pages_count: "ifGiven", fax_attempt: "ifGiven" },
    says: "in progress at the fax service",
  },
  wake: { from: ["deferred"], to: "deferred", sets: { next_attempt_at: "now" }, says: "due now" },
  retry: {
    from: ["failed", "cancelled", "unknown"],
    to: "queued",
    sets: {
      attempts: "zero",
      fax_tries: "zero",
      budget_from: "now",
      next_attempt_at: "clear",
      last_error: "clear",
      message_id: "clear",
      send_id: "clear",
      result_code: "clear",
      result_info: "clear",
      error_code: "clear",
      error_info: "clear",
      pages: "clear",
      pages_count: "clear",
      duration: "clear",
      fax_attempt: "clear",
      sent_at: "clear",
      finished_at: "clear",
    },
    says: "queued again by an operator (from `unknown` only once parked; never one its owner did not confirm)",
    unknownIfParked: true,
    numbered: true,
    confirming: "never",
  },
  cancel: {
    from: ["queued", "deferred", "held", "unknown"],
    to: "cancelled",
    sets: { finished_at: "now" },
    says: "cancelled (from `unknown` only once parked)",
    unknownIfParked: true,
  },
  hold: { from: ["queued", "deferred"], to: "held", sets: {}, says: "held" },
  release: {
    from: ["held"],
    to: "queued",
    sets: { next_attempt_at: "clear" },
    says: "released (never one that waits for its owner's confirmation)",
    numbered: true,
    confirming: "never",
  },
  /** The owner gave a job that waited for an address its numbers (the placeholder becomes the first). */
  address: {
    from: ["held"],
    to: "queued",
    sets: { number: "given", name: "given", last_error: "clear", budget_from: "now" },
    says: "addressed by its owner",
    placeholder: true,
  },
  unaddressed: {
    from: ["held"],
    to: "cancelled",
    sets: { last_error: "given", finished_at: "now" },
    says: "no address was given in time",
    placeholder: true,
  },
  /** The owner confirmed a fax to a number they never faxed before: all its recipients go. */
  confirm: {
    from: ["held"],
    to: "queued",
    sets: { last_error: "clear", next_attempt_at: "clear", budget_from: "now" },
    says: "confirmed by its owner (a new number)",
    confirming: "only",
  },
  unconfirmed: {
    from: ["held"],
    to: "cancelled",
    sets: { last_error: "given", finished_at: "now" },
    says: "its owner did not confirm the new number in time",
    confirming: "only",
  },
} as const satisfies Record<string, Transition>;

export type TransitionName = keyof typeof TRANSITIONS;

/** States a recipient never leaves on its own (an operator retry starts it again). */
export const FINAL_RECIPIENT_STATES = ["delivered", "failed", "cancelled"] as const satisfies readonly RecipientState[];
/** States that count as a fax in flight to a number (one at a time per number). */
export const IN_FLIGHT_STATES = ["sending", "unknown", "processing"] as const satisfies readonly RecipientState[];
/** Job states that are final (defined here once). */
export const FINAL_JOB_STATES = [
  "delivered",
  "failed",
  "partial",
  "cancelled",
  "corrupt",
] as const satisfies readonly JobState[];
/** Job states still to be worked on. */
export const OPEN_JOB_STATES = ["queued", "active", "held"] as const satisfies readonly JobState[];

/** The states `name` may start from, narrowed to `expect` when the caller gives one. */
export function fromStates(name: TransitionName, expect?: readonly RecipientState[]): RecipientState[] {
  const allowed = TRANSITIONS[name].from as readonly RecipientState[];
  return expect ? allowed.filter((s) => expect.includes(s)) : [...allowed];
}
