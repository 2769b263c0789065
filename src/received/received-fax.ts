// What a received fax is, for every stage that handles one (inbound/, notify/, web/, store/): the
// service's record of it, its life in a group's shared inbox (new -> taken -> done), and its
// timeline. How it is kept (SQL, rows) stays in store/sql/received.ts.

export type ReceivedState = "new" | "taken" | "done";

export const RECEIVED_STATES: readonly ReceivedState[] = ["new", "taken", "done"];

export interface NewReceivedFax {
  messageId: string;
  /** The configured user it was received for: the one the service's record names (inbound/attribution.ts). */
  user: string;
  /** The number the sender dialled (the service's faxNumber of an inbound record). */
  dialled: string | null;
  /** The sender's number (caller id) and station id. */
  sender: string | null;
  csid: string | null;
  pages: number | null;
  /** The service's status: success or failed. */
  status: string;
  receivedAt: string;
  /** The group inboxes it shows in (routing decides). */
  groups: string[];
  /** The PDF; null for a failed reception or when it could not be had. */
  document: Uint8Array | null;
  /** The first timeline entry (how it arrived and where it was routed). */
  detail: string;
  /**
   * Its text to be read by OCR (issue 51), queued in the same transaction as the fax is kept;
   * `waitsUntil`: content rules hold its routing until the text is known or this ISO time.
   */
  readText?: { waitsUntil: string | null };
}

/** A received fax as kept: the service's record (without the document's bytes and the first entry), and its inbox life. */
export interface ReceivedFax extends Omit<NewReceivedFax, "document" | "detail" | "readText"> {
  id: string;
  storedAt: string;
  state: ReceivedState;
  owner: string | null;
  note: string | null;
  /** When it was last re-sent to its group or a named person for not being taken. */
  escalatedAt: string | null;
  hasDocument: boolean;
  bytes: number;
  /**
   * The fax's text as OCR read it (issue 51), where the archive work provides it: FHIR attaches it,
   * a folder's `{matter}` pattern reads it. Absent until then; nothing here guesses it.
   */
  text?: string | null;
}

export interface ReceivedEvent {
  at: string;
  /** stored, routed, taken, released, done, note, forwarded, escalated... */
  action: string;
  /** The user who did it; null for the gateway itself. */
  actor: string | null;
  detail: string | null;
}
