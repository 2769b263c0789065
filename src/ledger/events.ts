// What the compliance ledger (issue 56) records: one row per event, who did what to which object,
// through which door. Written first as the contract the ledger, retention, legal holds and
// evidence bundles share; the ledger itself (append-only table in both stores, each row chained to
// the one before by its hash) implements `Ledger`.
//
// Never in a row: document content, a fax number in clear (`number` is stored as a keyed hash, so
// "every event for this number" still works for an operator who knows it), a secret.
import type { LedgerFields, Runner } from "../store/index.js";

export const LEDGER_ACTIONS = [
  "sent",
  "accepted",
  "refused",
  "viewed",
  "previewed",
  "downloaded",
  "report-fetched",
  "forwarded",
  "taken",
  "released",
  "cancelled",
  "resent",
  "addressed",
  "routed",
  "deleted",
  "purged",
  "held",
  "hold-released",
  "signed-in",
  "sign-in-failed",
  "factor-reset",
  "factor-enrolled",
  "key-minted",
  "key-deleted",
  "config-reloaded",
  "directory-sync",
  "evidence-made",
  // a sent fax's outcome at the service (actor service), or the gateway giving up on it
  "delivered",
  "failed",
  // a PDF (a sent fax's document or report, a received fax) leaving the gateway attached to a mail
  "mailed",
  // a console search over received faxes (issue 51): how many words and results, never the words
  "searched",
  // its owner's yes to a first fax to a new number (smtp.senderAuth.confirmNewDestinations)
  "confirmed",
] as const;
export type LedgerAction = (typeof LEDGER_ACTIONS)[number];

/** Who acted: a person (by their user name), an operator, the gateway itself, or the fax service. */
export interface LedgerActor {
  kind: "person" | "operator" | "gateway" | "service";
  /** the user name (person, operator); absent for the gateway and the service */
  id?: string;
}

/** What was acted on. A recipient is `<job id>#<idx>`; a legal hold by its own id. */
export interface LedgerObject {
  kind: "job" | "recipient" | "received" | "person" | "hold" | "config";
  id: string;
}

/** The way in: the intake doors, the console, the CLI, the JSON API, a mailed link, or none (the gateway's own work). */
export type LedgerDoor = "smtp" | "mx" | "mailbox" | "print" | "console" | "cli" | "api" | "link" | "gateway";

export interface LedgerEvent {
  action: LedgerAction;
  actor: LedgerActor;
  object: LedgerObject;
  door: LedgerDoor;
  /** the client's address (IP) where there is one */
  client?: string;
  /** a fax number the event concerns, in E.164: stored only as its keyed hash */
  number?: string;
  /** a few words or figures more (a reason, a page count, a route's name); never content, never a number */
  detail?: Readonly<Record<string, string | number | boolean>>;
}

/** A row as stored and read back. */
export interface LedgerRow {
  /** 1, 2, 3... without gaps: one chain per store, however many gateways append to it */
  seq: number;
  /** ISO time, UTC */
  at: string;
  action: LedgerAction;
  actor: LedgerActor;
  object: LedgerObject;
  door: LedgerDoor;
  client: string | null;
  /** the keyed hash of `number` (hex), null when the event concerned none */
  numberHash: string | null;
  detail: Record<string, string | number | boolean>;
  /** the hash of the row before (hex; the chain's first row: 64 zeros) */
  prevHash: string;
  /** SHA-256 over this row's fields and prevHash (hex) */
  hash: string;
}

export interface LedgerFilter {
  since?: string;
  until?: string;
  /** rows whose actor or object is this person */
  user?: string;
  object?: LedgerObject;
  /** rows concerning this number (compared by its keyed hash) */
  number?: string;
  /** rows of this action only */
  action?: LedgerAction;
  limit?: number;
}

export interface Ledger {
  /**
   * Appends one row. With `within`, inside the caller's transaction, so the event and what it
   * records commit together or not at all (a purge and its row; a hold and its row).
   */
  record(event: LedgerEvent, within?: Runner): Promise<void>;
  /** Several rows in one transaction (a job's recipients taken in at once); with `within`, in the caller's. */
  recordAll(events: readonly LedgerEvent[], within?: Runner): Promise<void>;
  rows(filter?: LedgerFilter): Promise<LedgerRow[]>;
  /**
   * The rows `events` are stored as, unsealed: for a commit the store makes itself (a new job and
   * its "sent" rows, QueueStore.enqueue), where the head is read and each row sealed.
   */
  rowsFor(events: readonly LedgerEvent[]): LedgerFields[];
  /**
   * Rows were committed in a transaction of the caller's (rowsFor's, record's `within`): seal them
   * into the chain soon (PostgreSQL commits rows unsealed, store/sql/ledger.ts; SQLite: nothing).
   */
  sealSoon(): void;
}

/**
 * One row per number a fax was given or had confirmed by its owner (a print "addressed" in the
 * console or with `faxgate address`, a new number "confirmed"): the recipient as the object, its
 * number only as the ledger's keyed hash, so "every event for this number" finds it.
 */
export function recipientEvents(
  action: "addressed" | "confirmed",
  job: { id: string; recipients: ReadonlyArray<{ idx: number; number: string }> },
  by: Pick<LedgerEvent, "actor" | "door" | "client">,
): LedgerEvent[] {
  return job.recipients.map((r) => ({
    action,
    ...by,
    object: { kind: "recipient", id: `${job.id}#${r.idx}` },
    number: r.number,
  }));
}
