// What a composer hands the notifier: the words of one notification mail, and what kind of news
// it is (the notifier decides recipients, preference, attachments and headers from that).
import type { Block } from "./mail-body.js";

export interface ComposedMail {
  subject: string;
  blocks: Block[];
  /** Bad news: something was not sent or not received. The admin copy goes with these. */
  failure: boolean;
  /** Sent whatever the user's preference (input refused after the SMTP reply, expired, corrupt). */
  mandatory: boolean;
}

export const FOOTER = "This message was sent automatically by faxgate, the fax gateway. Replies to it are not read.";

/** One line of at most `max` characters, cut at a word (never mid-word) with an ellipsis. */
export function clip(s: string, max: number): string {
  const one = s.replace(/\s+/g, " ").trim();
  if (one.length <= max) return one;
  const cut = one.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  // a single long word (a file name) is cut where it must be
  const head = space > max / 2 ? cut.slice(0, space) : cut;
  return `${head.replace(/[\s.,;:]+$/, "")}…`;
}
