// "Your fax is queued as <job>": the answer a mailbox sender gets where an SMTP client gets 250.
import type { AcceptedPayload } from "../store/index.js";
import { formatFaxNumber } from "../recipients/index.js";
import { clip, FOOTER, type ComposedMail } from "./composed-mail.js";
import { formatTime } from "./time-format.js";

export function composeAccepted(payload: AcceptedPayload, createdAt: string, timeZone: string): ComposedMail {
  const to = payload.numbers.map(formatFaxNumber).join(", ");
  const what = payload.subject ? `"${payload.subject}"` : "your fax";
  return {
    subject: clip(`Fax queued: ${what} to ${to}`, 120),
    blocks: [
      {
        kind: "para",
        text: `Your message to ${payload.via} was taken as a fax to ${to}. You will get another mail when it is delivered or has failed.`,
      },
      {
        kind: "fields",
        rows: [
          ["Subject", payload.subject],
          ["To", to],
          ["Received", formatTime(createdAt, timeZone)],
          ["Job", payload.jobId],
        ],
      },
      { kind: "para", text: FOOTER },
    ],
    failure: false,
    mandatory: false,
  };
}
