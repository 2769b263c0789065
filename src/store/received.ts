// Received faxes kept in the queue store: the service's record of each (who sent it, the number
// dialled, pages), its document, the inboxes it shows in, and its life in a group's shared inbox
// (new -> taken -> done) with every action in its timeline. One row per service messageId, so the
// webhook and the poller, however often they see a fax, keep it once. How it is kept: sql/received.ts.
import type { ReceivedState, NewReceivedFax, ReceivedFax, ReceivedEvent } from "../received/index.js";

export interface ReceivedFilter {
  /** The one fax with this service messageId. */
  messageId?: string;
  /** Faxes that show in any of these inboxes. */
  groups?: string[];
  states?: ReceivedState[];
  /** Received before this ISO time. */
  receivedBefore?: string;
  limit?: number;
}

export interface ReceivedChange {
  set: {
    state?: ReceivedState;
    owner?: string | null;
    note?: string | null;
    escalatedAt?: string | null;
    /** The inboxes it shows in (routed again once its text is known, issue 51). */
    groups?: string[];
  };
  /** Changed only from one of these states (a "take it" loses to one that came first). */
  expect?: ReceivedState[];
  event: Omit<ReceivedEvent, "at">;
}

/** The store's side of it (both backends; QueueStore extends this). */
export interface ReceivedStore {
  /** Keeps a received fax once: a second call with the same messageId stores nothing. */
  keepReceived(f: NewReceivedFax): Promise<{ fax: ReceivedFax; duplicate: boolean }>;
  getReceived(id: string): Promise<ReceivedFax | null>;
  listReceived(filter?: ReceivedFilter): Promise<ReceivedFax[]>;
  readReceivedDocument(id: string): Promise<Buffer | null>;
  /** Null when the fax is gone or not in an expected state (nothing changed then). */
  changeReceived(id: string, change: ReceivedChange): Promise<ReceivedFax | null>;
  listReceivedEvents(id: string): Promise<ReceivedEvent[]>;
  /** Removes received faxes (and their documents) received before now minus the retention. */
  purgeReceived(olderThanMs: number): Promise<number>;
}
