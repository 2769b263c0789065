// Input refused after the SMTP conversation was over (a spool file with no number, a document
// that turned out unreadable): the sender has no other way to learn it, so this mail always goes.
import { clip, FOOTER, type ComposedMail } from "./composed-mail.js";
import type { RejectedPayload } from "../store/index.js";
import { formatTime } from "./time-format.js";

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.trim() ? v : undefined;
}

// the fields are still checked: rows written by older versions may lack some
export function composeRejected(payload: RejectedPayload, createdAt: string, timeZone: string): ComposedMail {
  const file = str(payload.file);
  const subject = str(payload.subject);
  // reasons may arrive as describeError() text ("NO_DESTINATION: ..."); people need only the words
  // one sentence end, however the reason ended ("... its subject." + ". Nothing" made "..")
  const reason = (str(payload.reason) ?? "the gateway could not use it")
    .replace(/^[A-Z][A-Z_]+: /, "")
    .replace(/[\s.]+$/, "");
  const next = payload.senderUnproved
    ? "Nothing was faxed. If you did not send it, someone else wrote in your name and nothing needs doing; if you did, ask whoever runs your e-mail why it was not verified as yours."
    : payload.nothingToCorrect
      ? "Nothing was faxed this time, and there is nothing to correct."
      : "Nothing was faxed; please correct it and send it again.";
  const what = file ? `"${file}"` : subject ? `"${subject}"` : "your document";
  return {
    subject: clip(`Fax not sent: ${what}: ${reason}`, 120),
    blocks: [
      {
        kind: "para",
        text: `Your fax ${file || subject ? `(${what}) ` : ""}was not sent: ${reason}. ${next}`,
      },
      {
        kind: "fields",
        rows: [
          ["File", file],
          ["Subject", subject],
          ["Received", formatTime(createdAt, timeZone)],
          ["Job", str(payload.jobId)],
        ],
      },
      ...(payload.source === "spool" && file
        ? [
            {
              kind: "para" as const,
              text: `The file was moved to the "failed" folder of your print queue, with the reason beside it (${file}.reason.txt).`,
            },
          ]
        : []),
      ...(payload.source === "imap"
        ? [
            {
              kind: "para" as const,
              text: "The message was moved to the fax mailbox's folder for refused mail; nothing else was kept.",
            },
          ]
        : []),
      { kind: "para", text: FOOTER },
    ],
    failure: true,
    mandatory: true,
  };
}
