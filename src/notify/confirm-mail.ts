// A fax to a number its owner never faxed before waits for the owner (intake/confirm-new.ts):
// this mail says which numbers are new, that nothing was sent, and links to the console page that
// confirms or cancels it (after sign-in). The link does nothing by itself: only the page's button
// does, so a mail scanner that follows links confirms nothing. Sent whatever the preference: the
// fax cannot go without it, and a fax the user did not send is news they must have.
import type { Job } from "../store/index.js";
import { clip, FOOTER, type ComposedMail } from "./composed-mail.js";
import { formatTime } from "./time-format.js";

export function composeConfirm(
  job: Job,
  newNumbers: readonly string[],
  link: string | null,
  expiresAt: string,
  timeZone: string,
): ComposedMail {
  const what = job.cover.subject || job.meta.origin?.subject || job.documents[0]?.name || "a fax";
  const others = job.recipients.map((r) => r.number).filter((n) => !newNumbers.includes(n));
  const list = newNumbers.join(", ");
  return {
    subject: clip(`Confirm your fax to a new number: ${list}`, 120),
    blocks: [
      {
        kind: "para",
        text: `A fax in your name ("${what}") is waiting: it goes to ${newNumbers.length === 1 ? "a number" : "numbers"} you have never faxed before (${list}). It has not been sent.`,
      },
      link
        ? { kind: "para", text: `If you sent it, confirm it here (sign in first): ${link}` }
        : {
            kind: "para",
            text: 'If you sent it, confirm it in the fax gateway\'s web console, where it is listed first under "Waiting for you".',
          },
      {
        kind: "para",
        text: "If you did not send it, do not confirm it: cancel it there, or leave it and it ends by itself. Someone may be resending a mail of yours to other numbers; tell your administrator.",
      },
      {
        kind: "fields",
        rows: [
          ["Job", job.id],
          ["Received", formatTime(job.createdAt, timeZone)],
          ["New numbers", list],
          ...(others.length ? ([["Also to (faxed before)", others.join(", ")]] as Array<[string, string]>) : []),
          ["Waits until", formatTime(expiresAt, timeZone)],
        ],
      },
      {
        kind: "para",
        text: `If it is not confirmed by then, it is cancelled without being faxed and you are told. ${FOOTER}`,
      },
    ],
    failure: false,
    mandatory: true,
  };
}
