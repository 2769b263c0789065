// The dispatcher's ledger rows (docs/compliance.md): the service took a fax (accepted), said it
// went through (delivered) or not (failed), the gateway gave up on one (failed, actor gateway) or
// sends one again after a reconcile found it never arrived (resent). Written after the store's
// transition that they record has committed: a ledger that cannot be written is logged loudly,
// never allowed to undo or repeat a send.
import { describeError } from "../errors.js";
import type { LedgerAction, LedgerActor } from "../ledger/index.js";
import type { DispatchContext } from "./context.js";
import { childLog } from "../log/index.js";

export async function recordOutcome(
  ctx: Pick<DispatchContext, "ledger" | "log">,
  r: { jobId: string; idx: number; number: string },
  action: LedgerAction,
  actor: LedgerActor["kind"],
  detail: Record<string, string | number | boolean> = {},
): Promise<void> {
  try {
    await ctx.ledger.record({
      action,
      actor: { kind: actor },
      object: { kind: "recipient", id: `${r.jobId}#${r.idx}` },
      door: "gateway",
      number: r.number,
      detail,
    });
  } catch (err) {
    childLog(ctx.log, { job: r.jobId }).error(
      { err: describeError(err), action },
      "LEDGER the outcome's row was not recorded",
    );
  }
}
