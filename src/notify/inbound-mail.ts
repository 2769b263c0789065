// The mail for a fax the user received: who sent it (number and CSID), pages, time.
import { explainResult } from "../fax/index.js";
import { type InboundPayload, isFailedReception } from "../received/index.js";
import { faxNumber, pages } from "../format.js";
import { clip, FOOTER, type ComposedMail } from "./composed-mail.js";
import { formatDuration, formatTime, plural } from "./time-format.js";

export type { InboundPayload };

export function composeInbound(p: InboundPayload, timeZone: string, defaultCountryCode?: string): ComposedMail {
  // a caller id the service keeps without its country code is read with the gateway's default one
  const number = (n: string | null): string | null => faxNumber(n, defaultCountryCode);
  const from = number(p.from) ?? p.csid ?? "an unknown sender";
  const failed = isFailedReception(p);
  const words = failed ? explainResult(p).words : null;
  const prefix = p.escalated ? "Not yet taken: " : "";
  const mail: ComposedMail = {
    subject: failed
      ? clip(`Fax reception from ${from} failed: ${words}`, 120)
      : p.pages
        ? `Fax received from ${from}, ${plural(p.pages, "page")}`
        : `Fax received from ${from}`,
    blocks: [
      {
        kind: "para",
        text: failed
          ? `A fax from ${from} could not be received: ${words}.`
          : p.group
            ? `A fax from ${from} arrived in the shared inbox of group ${p.group}${p.escalated ? " and nobody has taken it yet" : ""}. Take it in the console's shared inbox.`
            : `You received a fax from ${from}.`,
      },
      {
        kind: "fields",
        rows: [
          ["From", number(p.from)],
          ["Sender CSID", p.csid],
          ["Number dialled", number(p.dialled ?? null)],
          ["Pages", pages(p.pages)],
          // the service reports the time of one page, not of the whole fax
          ["Time per page", formatDuration(p.duration)],
          ["Received", formatTime(p.createdAt, timeZone)],
          ["Message id", p.messageId],
        ],
      },
      { kind: "para", text: FOOTER },
    ],
    failure: failed,
    mandatory: false,
  };
  return { ...mail, subject: clip(prefix + mail.subject, 120) };
}
