// The look for a reply code on a received fax (issue 51): run by the OCR duty before it reads the
// fax's text (off the webhook path, in OCR's sandbox and bounds), only while the fax is held. The
// codes found are checked with the fleet's key; the first valid one routes the fax to the sender
// of the fax it answers (received-intake.ts routeByReply). A look that cannot be made (pdftoppm
// missing, too slow) leaves the fax to the rules.
import { describeError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { findExecutable } from "../fs/index.js";
import { planSandbox, type SandboxPlan } from "../workers/index.js";
import { scanForReplyCodes, verifyReplyCode } from "../reply-sheet/index.js";
import { type Db, getReceivedText } from "../store/index.js";
import type { ReceivedFaxIntake, ReplyFinding } from "./received-intake.js";

export interface ReplyRoutingOptions {
  store: { readonly sql: Db };
  intake: Pick<ReceivedFaxIntake, "routeByReply">;
  key: () => Promise<Buffer>;
  /** replySheets.timeout, .pages, .memoryMb */
  timeoutMs: number;
  pages: number;
  memoryMb: number;
  /** as ocr.sandbox: pdftoppm runs isolated as OCR does */
  sandbox: "auto" | "required" | "off";
  logger: Logger;
}

export class ReplyRouting {
  /** Process groups of renders in progress (killed at stop). */
  readonly children = new Set<number>();

  private plan: Promise<SandboxPlan> | null = null;

  constructor(private readonly o: ReplyRoutingOptions) {}

  stop(): void {
    for (const pid of this.children) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  }

  /** Looks at a held fax's pages and routes it by what was found. */
  async look(faxId: string, pdf: Uint8Array): Promise<void> {
    // routed already (a run tried again, or the wait ran out): nothing to decide
    if (!(await getReceivedText(this.o.store.sql, faxId))?.waitsUntil) return;
    const found = await this.find(faxId, pdf);
    await this.o.intake.routeByReply(faxId, found);
  }

  private async find(faxId: string, pdf: Uint8Array): Promise<ReplyFinding> {
    this.plan ??= planSandbox({ mode: this.o.sandbox, command: findExecutable("pdftoppm") });
    const plan = await this.plan;
    if (this.o.sandbox === "required" && plan.method !== "bwrap")
      return { kind: "skipped", why: "ocr.sandbox is required, but pdftoppm cannot be isolated here" };
    const scan = await scanForReplyCodes(pdf, {
      plan: this.plan,
      timeoutMs: this.o.timeoutMs,
      maxPages: this.o.pages,
      memoryMb: this.o.memoryMb,
      children: this.children,
    }).catch((err: unknown) => ({ kind: "skipped" as const, why: describeError(err) }));
    if (scan.kind === "skipped") {
      this.o.logger.warn({ received: faxId, why: scan.why }, "reply codes could not be looked for");
      return { kind: "skipped", why: scan.why };
    }
    const key = await this.o.key();
    let forged = false;
    for (const text of scan.texts) {
      const v = verifyReplyCode(key, text);
      if (v.kind === "valid") return v;
      if (v.kind === "forged") forged = true;
    }
    return { kind: forged ? "forged" : "none" };
  }
}
