// A sender check's verdict, shared by the check of the message itself (verify-sender.ts) and of a
// relay's Authentication-Results (mail-auth/relay-verdict.ts, worded here).
import type { FaxgateError } from "../../errors.js";
import type { SignedMessage } from "../../mail-auth/index.js";

/** What proved the sender (or failed to): also the `check` label of the metric. */
export type VerdictCheck = "dmarc" | "spf+dkim" | "spf" | "dkim" | "arc" | "from" | "relay" | "trusted" | "auth";

export type SenderVerdict =
  | {
      ok: true;
      check: VerdictCheck /** one line for the log and the outcome mail */;
      detail: string;
      /** a stranger's message: what its aligned signatures prove beyond the sender */
      signed?: SignedMessage;
    }
  | { ok: false; check: VerdictCheck; temporary: boolean; refusal: FaxgateError; detail: string };
