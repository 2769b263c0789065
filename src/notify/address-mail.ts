// A print job that named no destination waits for its owner (transitions.ts NEEDS_ADDRESS): this
// mail says so and links to the console page where the number is given. It is news the owner must
// act on, so it goes under the "All" and "Failure" preferences (not "None"), without an admin copy.
import { clip, FOOTER, type ComposedMail } from "./composed-mail.js";
import type { Job } from "../store/index.js";
import { formatTime } from "./time-format.js";

export function composeAddress(job: Job, link: string | null, expiresAt: string, timeZone: string): ComposedMail {
  const what = job.cover.subject || job.meta.origin?.file || job.documents[0]?.name || "your print job";
  return {
    subject: clip(`Your print "${what}" needs a fax number`, 120),
    blocks: [
      {
        kind: "para",
        text: `You printed "${what}" to the fax printer without a fax number. It has not been faxed: it waits for you to say where it goes.`,
      },
      link
        ? { kind: "para", text: `Give the number (or pick a contact) and send it here: ${link}` }
        : {
            kind: "para",
            text: 'Give the number in the fax gateway\'s web console, where it is listed first under "Waiting for you".',
          },
      {
        kind: "fields",
        rows: [
          ["Job", job.id],
          ["Printed", formatTime(job.createdAt, timeZone)],
          ["Waits until", formatTime(expiresAt, timeZone)],
        ],
      },
      {
        kind: "para",
        text: `If no number is given by then, it is removed without being faxed and you are told. ${FOOTER}`,
      },
    ],
    failure: false,
    mandatory: false,
  };
}
