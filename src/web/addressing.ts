// Print now, address later, in the console: a print job that named no destination waits as
// "needs an address" (transitions.ts NEEDS_ADDRESS). Its owner sees it first in their list
// (GET /api/waiting), opens /address.html?id=... with the pages' preview, types or picks the
// numbers and sends it (POST /api/jobs/:id/address) through intake/address-waiting.ts, the checks
// `faxgate address` uses too. Operators list everyone's waiting jobs (GET /api/waiting?all=1); only
// the owner addresses one, as only the owner can say where it goes. The list also holds faxes to a
// new number waiting for their owner's confirmation (web/confirming.ts).
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { Clock } from "../clock.js";
import { FaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import { type Ledger, recipientEvents } from "../ledger/index.js";
import type { DestinationCheck } from "../recipients/index.js";
import { addressWaiting } from "../intake/index.js";
import type { Logger } from "../log/index.js";
import { waitsForAddress, waitsForConfirmation, type Job } from "../store/index.js";
import { jobJson } from "../job-json.js";
import type { ConsoleStore } from "./queue-view.js";
import { sessionOf } from "./sessions.js";

export interface AddressingDeps {
  store: ConsoleStore;
  clientFor: (user: string) => FaxApi;
  destinations: DestinationCheck;
  defaultCountryCode: () => string;
  logger: Logger;
  clock: Clock;
  /** The job named in the URL if this session may see it (else the console's 404). */
  ownJob: (req: FastifyRequest) => Promise<Job>;
  /** Whether this user may queue one more fax now (the console's per-minute limit). */
  mayQueue: (user: string) => boolean;
  /** A change the live list should show. */
  changed: () => void;
  /** How a fax waiting for its owner's confirmation is shown (web/confirming.ts). */
  confirmationView: (job: Job) => object;
  ledger: Pick<Ledger, "recordAll">;
}

const WAITING_MAX = 200;

export const addressingRoutes: FastifyPluginAsync<AddressingDeps> = async (api, deps) => {
  const view = (j: Job) => ({ ...jobJson(j, new Map(), deps.clock.now()), needsAddress: waitsForAddress(j) });

  api.get("/api/waiting", async (req) => {
    const s = sessionOf(req);
    const everyone = s.admin && (req.query as Record<string, string | undefined>).all === "1";
    const held = await deps.store.listJobs({
      state: "held",
      ...(everyone ? {} : { user: s.user }),
      limit: WAITING_MAX,
    });
    // oldest first: the one closest to expiring leads; a fax to a new number waits for its owner too
    return held
      .filter((j) => waitsForAddress(j) || waitsForConfirmation(j))
      .reverse()
      .map((j) => (waitsForAddress(j) ? view(j) : deps.confirmationView(j)));
  });

  api.post("/api/jobs/:id/address", async (req) => {
    const s = sessionOf(req);
    const job = await deps.ownJob(req);
    if (job.user !== s.user)
      throw new FaxgateError("JOB_STATE", `only ${job.user}, who printed it, can say where this fax goes`, {
        httpStatus: 403,
      });
    const body = (req.body ?? {}) as Record<string, unknown>;
    const text = (v: unknown) => (typeof v === "string" ? v : undefined);
    const after = await addressWaiting(
      {
        store: deps.store,
        destinations: deps.destinations,
        defaultCountryCode: deps.defaultCountryCode(),
        contacts: deps.clientFor(s.user),
        mayQueue: () => deps.mayQueue(s.user),
      },
      job,
      {
        to: (Array.isArray(body.to) ? body.to : [body.to])
          .filter((x): x is string => typeof x === "string")
          .map((x) => x.slice(0, 200)),
        subject: text(body.subject),
        notes: text(body.notes),
        cover:
          body.cover === true ||
          (typeof body.cover === "string" && ["on", "true", "1", "yes"].includes(body.cover.toLowerCase())),
      },
    );
    await deps.ledger.recordAll(
      recipientEvents("addressed", after, { actor: { kind: "person", id: s.user }, door: "console", client: req.ip }),
    );
    deps.logger.info(
      { user: s.user, job: job.id, recipients: after.recipients.length },
      "WEB addressed a waiting print job",
    );
    deps.changed();
    return view(after);
  });
};
