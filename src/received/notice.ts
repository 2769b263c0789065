// What the notice of a received fax says, as the poller, the webhook, the shared inbox and its
// escalation all queue it; notify/ turns it into mail.
import type { ReceivedFax } from "./received-fax.js";

/** What the inbound poller stores: a snapshot of the service's record of a received fax. */
export interface InboundPayload {
  messageId: string;
  status: string;
  /** The sender's number. */
  from: string | null;
  csid: string | null;
  pages: number | null;
  duration: number | null;
  createdAt: string | null;
  resultCode: string | null;
  resultInfo: string | null;
  errorCode: string | null;
  errorInfo: string | null;
  /** The number the sender dialled (absent in notifications queued before it was kept). */
  dialled?: string | null;
  /** The kept fax (store/sql/received.ts): its document is attached from the store. */
  receivedId?: string;
  /** Told as a member of this group's shared inbox. */
  group?: string;
  /** A shared mailbox or escalation address named by a rule: mailed there whatever the preference. */
  to?: string;
  /** Sent again because nobody took it in time. */
  escalated?: boolean;
}

/** The notice of a kept received fax, as the inbox's forward and its escalation send it again. */
export function keptFaxPayload(fax: ReceivedFax, extra: Partial<InboundPayload>): InboundPayload {
  return {
    messageId: fax.messageId,
    status: fax.status,
    from: fax.sender,
    csid: fax.csid,
    pages: fax.pages,
    duration: null,
    createdAt: fax.receivedAt,
    resultCode: null,
    resultInfo: null,
    errorCode: null,
    errorInfo: null,
    dialled: fax.dialled,
    receivedId: fax.id,
    ...extra,
  };
}

export function isFailedReception(p: Pick<InboundPayload, "status">): boolean {
  return p.status === "failed";
}
