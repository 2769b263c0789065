// The replay record: a signed message is used at most once (store/signed-uses.ts keeps it, in the
// queue store, so it holds across restarts and across gateways sharing one PostgreSQL). A sending
// server that splits one message's recipients over several transactions delivers each number once;
// a mailbox message is one delivery and takes the whole message. The use is recorded before the
// job is made and given back when no job was made, so a crash between the two refuses the copy
// rather than fax it twice: the sender's server was never told 250 and bounces with the reason.
import { randomUUID } from "node:crypto";
import { type QueueStore, WHOLE_MESSAGE } from "../store/index.js";
import { FUTURE_SKEW_MS, refusal } from "./wanted.js";

export type ReplayStore = Pick<QueueStore, "useSignedMessage" | "releaseSignedMessage">;

/** A message's use to record: its keys, the numbers (or the whole message), who claims it. */
export interface ReplayClaim {
  keys: string[];
  /** the fax numbers, or undefined for the whole message */
  numbers?: string[];
  /** the claimant: a mailbox message's own key (found again after a crash, it is the same use); default a new one */
  claim?: string;
}

/** How long a use is remembered past the freshness window: a copy cannot pass that window anyway. */
const MARGIN_MS = 24 * 3_600_000;

/**
 * Records the use, or throws the refusal naming when the message was used before. Answers the
 * claim to give back (release) when no job is made after all.
 */
export async function useSignedMessage(
  store: ReplayStore,
  use: ReplayClaim,
  opts: { now: number; maxMessageAgeHours: number },
): Promise<string> {
  const claim = use.claim ?? `use:${randomUUID()}`;
  const answer = await store.useSignedMessage({
    keys: use.keys,
    recipients: use.numbers ?? [WHOLE_MESSAGE],
    claim,
    purgeBefore: new Date(opts.now - opts.maxMessageAgeHours * 3_600_000 - FUTURE_SKEW_MS - MARGIN_MS),
  });
  if (!answer.ok) {
    const to = answer.recipient === WHOLE_MESSAGE ? "" : ` to ${answer.recipient}`;
    throw refusal(
      "SIGNED_MAIL_REPLAYED",
      `This signed message was already faxed${to} at ${answer.usedAt.slice(0, 19).replace("T", " ")} UTC: a copy of a signed mail cannot be faxed again; send a new mail`,
    );
  }
  return claim;
}
