// The one rule for what of a fax may leave the gateway by mail (notify.attachments). Every mail
// that could carry something of a fax asks it: the outcome mail and its transmission report, the
// received-fax mail, the accepted, not-sent and needs-a-number mails. A clinic's `never` must hold
// for all of them, not only for the attached PDF: the report's reduced first page is the page's
// own vector text, and a subject or a file name ("Referral for J. Roe") says what the fax is about.
// Alert and key-expiry mails carry nothing of a fax (numbers and job ids only) and need no rule.
import type { NotifyConfig } from "../config/index.js";
import type { AcceptedPayload, RejectedPayload, Job } from "../store/index.js";

export type AttachmentsSetting = NotifyConfig["attachments"];

export interface WhatLeaves {
  /** The fax itself as a PDF (only when the user's service preference asks for it too). */
  document: boolean;
  /** A picture of a page: the transmission report's reduced first page. */
  pageImage: boolean;
  /** What names its content: subject, notes, cover text, file names. */
  words: boolean;
}

/** What a mail about a fax sent (`sent`) or received (`received`) may carry under `setting`. */
export function whatLeaves(setting: AttachmentsSetting | undefined, fax: "sent" | "received"): WhatLeaves {
  switch (setting ?? "service") {
    case "never":
      return { document: false, pageImage: false, words: false };
    case "inbound-only":
      // a received fax still arrives by mail; of a sent one, only that it went and its subject
      return fax === "received"
        ? { document: true, pageImage: true, words: true }
        : { document: false, pageImage: false, words: true };
    default:
      return { document: true, pageImage: true, words: true };
  }
}

const ORIGIN_WORDS = ["subject", "file", "fileName"];

/** The job as a mail may describe it: without subject, notes and file names unless `leaves.words`. */
export function jobForMail(job: Job, leaves: WhatLeaves): Job {
  if (leaves.words) return job;
  const origin = Object.fromEntries(Object.entries(job.meta.origin ?? {}).filter(([k]) => !ORIGIN_WORDS.includes(k)));
  // whom it is for stays (recipientName): the mail names the destinations anyway
  const { subject: _s, notes: _n, ...cover } = job.cover;
  return {
    ...job,
    cover,
    meta: {
      ...job.meta,
      origin,
      ...(job.meta.leftOut ? { leftOut: job.meta.leftOut.map((l, i) => ({ ...l, name: `attachment ${i + 1}` })) } : {}),
    },
    documents: job.documents.map((d, i) => ({ ...d, name: `document ${i + 1}` })),
    original: job.original ? { ...job.original, name: "your document" } : null,
  };
}

/** An accepted or not-sent notice as a mail may tell it: without subject and file name unless `leaves.words`. */
export function payloadForMail<P extends AcceptedPayload | RejectedPayload>(payload: P, leaves: WhatLeaves): P {
  if (leaves.words) return payload;
  const copy: P & { file?: string } = { ...payload };
  delete copy.subject;
  delete copy.file;
  return copy;
}
