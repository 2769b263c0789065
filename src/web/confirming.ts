// A first fax to a new number waits for its owner (intake/confirm-new.ts, the "confirm" mail):
// /confirm.html?id=... asks for sign-in, shows the pages' preview and the new numbers, and
// Confirm (POST /api/jobs/:id/confirm) queues the whole fax; Cancel is the console's own cancel.
// Only the owner confirms (another user gets the console's 404; an operator sees it but gets
// 403), as only the owner knows whether they sent it. The store's step is guarded, so two clicks
// or two tabs release it once and a click racing the expiry has one winner.
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { Clock } from "../clock.js";
import { FaxgateError } from "../errors.js";
import { jobJson } from "../job-json.js";
import { type Ledger, recipientEvents } from "../ledger/index.js";
import type { Logger } from "../log/index.js";
import { newNumbers, waitsForConfirmation, type QueueStore, type Job } from "../store/index.js";
import { sessionOf } from "./sessions.js";

export interface ConfirmingDeps {
  store: Pick<QueueStore, "confirm" | "listEvents">;
  logger: Logger;
  clock: Clock;
  /** smtp.senderAuth.confirmWait (ms): when an unconfirmed fax ends */
  confirmWaitMs: () => number;
  /** The job named in the URL if this session may see it (else the console's 404). */
  ownJob: (req: FastifyRequest) => Promise<Job>;
  changed: () => void;
  ledger: Pick<Ledger, "recordAll">;
}

/** What the confirm page and the waiting list show of a job that waits (or waited) for its owner. */
export function confirmationView(job: Job, clock: Clock, waitMs: number) {
  const fresh = newNumbers(job);
  return {
    ...jobJson(job, new Map(), clock.now()),
    needsConfirmation: waitsForConfirmation(job),
    newNumbers: fresh,
    otherNumbers: job.recipients.map((r) => r.number).filter((n) => !fresh.includes(n)),
    confirmBy: new Date(Date.parse(job.createdAt) + waitMs).toISOString(),
  };
}

export const confirmingRoutes: FastifyPluginAsync<ConfirmingDeps> = async (api, deps) => {
  const view = (j: Job) => confirmationView(j, deps.clock, deps.confirmWaitMs());

  api.get("/api/jobs/:id/confirmation", async (req) => view(await deps.ownJob(req)));

  api.post("/api/jobs/:id/confirm", async (req) => {
    const s = sessionOf(req);
    const job = await deps.ownJob(req);
    if (job.user !== s.user)
      throw new FaxgateError("JOB_STATE", `only ${job.user}, in whose name it came, can confirm this fax`, {
        httpStatus: 403,
      });
    const { job: after, moved } = await deps.store.confirm(job.id, s.user);
    if (moved === 0) {
      // a second click or tab: the first one's release stands, and this one says so
      const confirmed = (await deps.store.listEvents(job.id)).some((e) => e.transition === "confirm");
      if (!confirmed)
        throw new FaxgateError(
          "JOB_STATE",
          `job ${job.id} is not waiting for confirmation (it was cancelled, or it expired unconfirmed, and was not sent)`,
        );
      return { ...view(after), alreadyConfirmed: true };
    }
    // the numbers the owner said yes to (the others were known already)
    const fresh = new Set(newNumbers(job));
    await deps.ledger.recordAll(
      recipientEvents(
        "confirmed",
        { id: job.id, recipients: job.recipients.filter((r) => fresh.has(r.number)) },
        { actor: { kind: "person", id: s.user }, door: "console", client: req.ip },
      ),
    );
    deps.logger.info({ user: s.user, job: job.id, recipients: moved }, "WEB confirmed a fax to a new number");
    deps.changed();
    return view(after);
  });
};
