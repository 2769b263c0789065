// The notice of a received fax from the service's record of it, for the poller and the intake alike.
import type { FaxRecord } from "../fax/index.js";
import type { InboundPayload } from "../received/index.js";

export function inboundPayload(r: FaxRecord): InboundPayload {
  return {
    messageId: r.messageId,
    status: r.status,
    // on an inbound record faxNumber is the number dialled (the record's destination, ours); the
    // sender is the caller id (digits, with or without +)
    from: senderOf(r),
    dialled: r.faxNumber || null,
    csid: r.faxCsid || null,
    pages: r.pagesCount ?? r.pagesComplete ?? null,
    duration: r.duration ?? null,
    createdAt: r.createdAt ?? null,
    resultCode: r.resultCode ?? null,
    resultInfo: r.resultInfo ?? null,
    errorCode: r.errorCode ?? null,
    errorInfo: r.errorInfo ?? null,
  };
}

export function senderOf(r: Pick<FaxRecord, "faxCallerId">): string | null {
  const c = (r.faxCallerId ?? "").trim();
  if (!c) return null;
  return /^\+?\d{4,15}$/.test(c) ? (c.startsWith("+") ? c : `+${c}`) : c;
}
