// A recipient's life as one table: every change of state the queue makes, by name, with the
// states it may start from and the state it ends in. Both store backends build their guards
// (`state IN (...)`) from this table and write a JobEvent for each step; nothing else in the
// code base lists states a transition may start from.
import type { JobState, RecipientState } from "./types.js";

export interface Transition {
  from: readonly RecipientState[];
  to: RecipientState;
  /** What the step means, for the docs and the console's timeline. */
  says: string;
  /** From `unknown` only a parked send (lastError "parked: ..."), never one still being looked up. */
  unknownIfParked?: true;
  /** Only a recipient with a number: never the placeholder of a job that waits for an address. */
  numbered?: true;
  /** Only the placeholder of a job that waits for an address (number '', lastError NEEDS_ADDRESS). */
  placeholder?: true;
}

/**
 * The lastError prefix of a send the gateway gave up guessing about (dispatch/track.ts park()):
 * it is never sent again by itself, only by an operator's retry, and an operator may cancel it.
 */
export const PARKED = "parked";

/**
 * A print job with no destination waits for its owner to give one (console, src/web/addressing.ts):
 * its one recipient is a placeholder, number '' and this lastError, held until `address` gives it
 * numbers or `unaddressed` ends it after spool.addressWaitHours. Nothing sends or releases it.
 */
export const NEEDS_ADDRESS = "needs an address";

/** Why an operator's retry or cancel moved nothing (both backends say the same). */
export const RETRY_REFUSAL = "only failed, cancelled or parked recipients can be retried";
export const CANCEL_REFUSAL =
  "only queued, deferred, held or parked recipients can be cancelled (in-flight faxes finish)";

export const TRANSITIONS = {
  claim: { from: ["queued", "deferred"], to: "sending", says: "claimed by a gateway to be sent" },
  /** A lease ran out (or the gateway stopped) during a send: it may have reached the service. */
  expire: { from: ["sending"], to: "unknown", says: "the send was interrupted; its outcome is being looked up" },
  accept: { from: ["sending", "unknown"], to: "processing", says: "accepted by the fax service" },
  lose: { from: ["sending", "unknown"], to: "unknown", says: "the answer to the send was lost; it is being looked up" },
  postpone: { from: ["unknown"], to: "unknown", says: "the lookup will be tried again" },
  defer: { from: ["sending", "unknown", "processing"], to: "deferred", says: "will be tried again" },
  fail: { from: ["sending", "unknown", "processing", "deferred", "queued"], to: "failed", says: "failed" },
  deliver: { from: ["processing", "unknown", "sending"], to: "delivered", says: "delivered" },
  progress: { from: ["processing"], to: "processing", says: "in progress at the fax service" },
  wake: { from: ["deferred"], to: "deferred", says: "due now" },
  retry: {
    from: ["failed", "cancelled", "unknown"],
    to: "queued",
    says: "queued again by an operator (from `unknown` only once parked)",
    unknownIfParked: true,
    numbered: true,
  },
  cancel: {
    from: ["queued", "deferred", "held", "unknown"],
    to: "cancelled",
    says: "cancelled (from `unknown` only once parked)",
    unknownIfParked: true,
  },
  hold: { from: ["queued", "deferred"], to: "held", says: "held" },
  release: { from: ["held"], to: "queued", says: "released", numbered: true },
  /** The owner gave a job that waited for an address its numbers (the placeholder becomes the first). */
  address: { from: ["held"], to: "queued", says: "addressed by its owner", placeholder: true },
  unaddressed: { from: ["held"], to: "cancelled", says: "no address was given in time", placeholder: true },
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

/**
 * The rest of transition `name`'s guard, as SQL for either backend: where the table says so, an
 * `unknown` row qualifies only when it is parked, and a placeholder (number '') only for the
 * transitions made for it. Empty for the other transitions.
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
    (t.placeholder ? ` AND ${number} = ''` : "")
  );
}

/** SQL text `'a','b'` for a guard built from the table (state names are fixed words, never input). */
export function sqlStateList(states: readonly string[]): string {
  return states.map((s) => `'${s}'`).join(",");
}
