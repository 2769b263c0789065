// What the dispatcher's parts share: the store, clients, config, and one gate for API calls
// (rate, concurrency and 429 pauses apply to every call the dispatcher makes).
import type { ApiConfig, QueueConfig } from "../config/index.js";
import type { Clock } from "../clock.js";
import type { DestinationCheck } from "../recipients/index.js";
import type { FaxApi, FaxFile, FaxRecord, ApiGate } from "../fax/index.js";
import type { Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import type { FaxResultFields, QueueStore } from "../store/index.js";
import type { KeyHolds } from "../keys/index.js";
import type { Ledger } from "../ledger/index.js";

/** What the dispatcher asks of the fleet's shared budget. */
export interface FleetShare {
  /** Whether this gateway follows `user`'s faxes in progress (one gateway per user at a time). */
  owns(user: string): boolean;
  /** Sends this gateway may hold claimed so that all can go out within `leaseMs` at its share of the rate. */
  claimRoom(leaseMs: number): number;
}

export interface DispatchContext {
  store: QueueStore;
  clientFor: (user: string) => FaxApi;
  api: ApiConfig;
  queue: QueueConfig;
  log: Logger;
  clock: Clock;
  owner: string;
  metrics?: Metrics;
  /** The destination policy; a recipient it refuses fails without a send (a rule changed after queueing). */
  destinations: DestinationCheck;
  /** Runs one API call through the shared rate/concurrency gate. */
  call<T>(fn: () => Promise<T>): Promise<T>;
  /** The service said 429: no calls for this long. */
  pause(ms: number): void;
  /** The process's API gate, when the clients share one: polling asks it whether history is free. */
  gate?: ApiGate;
  /** The fleet on a shared store (store/sql/fleet-budget.ts): who follows whose faxes, how much to claim. */
  fleet?: FleetShare;
  /** Users whose key the service refused: their faxes wait (see src/keys/key-holds.ts). */
  holds: KeyHolds;
  /** A 401/403 on `user`'s key: hold the user (logged loudly and mailed to the admin once). */
  keyRefused(user: string, reason: string): void;
  /** `user`'s key answered again: end the hold, send the held faxes now. */
  keyWorks(user: string): void;
  /** Each outcome (accepted, delivered, failed, resent) is a ledger row (ledger-rows.ts). */
  ledger: Pick<Ledger, "record">;
  /** Makes a job's reply sheet ([reply], src/reply-sheet/), uploaded after its documents. */
  replySheets?: { fileFor(job: { id: string; user: string }): Promise<FaxFile> };
}

/** Fax numbers compared by digits: the service may drop the + or format them. */
export function sameNumber(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return false;
  return a.replace(/\D/g, "") === b.replace(/\D/g, "");
}

export function resultFields(rec: FaxRecord): FaxResultFields {
  return {
    messageId: rec.messageId,
    resultCode: rec.resultCode ?? null,
    resultInfo: rec.resultInfo ?? null,
    errorCode: rec.errorCode ?? null,
    errorInfo: rec.errorInfo ?? null,
    pagesComplete: rec.pagesComplete ?? null,
    pagesCount: rec.pagesCount ?? null,
    duration: rec.duration ?? null,
    faxAttempt: rec.faxAttempt ?? null,
  };
}

/** YYYY-MM-DD of the day before `iso` (history's fromDate is a date; a day of slack covers time zones). */
export function dayBefore(iso: string | null, nowMs: number): string {
  const t = iso ? Date.parse(iso) : nowMs;
  return new Date(t - 86_400_000).toISOString().slice(0, 10);
}

/** The store's state key holding what cfEcho learnt (tests wait on it to know the proof is in). */
export const CF_STATE = "service:cf-echo";

/**
 * What the service does with our custom fields, learnt from the records of our own faxes:
 * 'kept' once a record came back with our cf, 'dropped' once one came back without it (the last
 * word wins: an account's custom-field setup can change). Null until a record was seen.
 */
export async function cfEcho(ctx: Pick<DispatchContext, "store">): Promise<"kept" | "dropped" | null> {
  const v = await ctx.store.getState(CF_STATE);
  return v === "kept" || v === "dropped" ? v : null;
}

/** Notes what a record of one of our own faxes says about cf (see cfEcho). */
export async function noteCf(ctx: Pick<DispatchContext, "store">, rec: FaxRecord): Promise<void> {
  const seen =
    rec.cf && typeof rec.cf === "object" && typeof rec.cf.faxgateSend === "string" && rec.cf.faxgateSend !== ""
      ? "kept"
      : "dropped";
  try {
    if ((await ctx.store.getState(CF_STATE)) !== seen) await ctx.store.setState(CF_STATE, seen);
  } catch {
    // Only a hint for reconciliation; without it a lost answer is parked, never resent.
  }
}
