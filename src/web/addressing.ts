// Print now, address later, in the console: a print job that named no destination waits as
// "needs an address" (transitions.ts NEEDS_ADDRESS). Its owner sees it first in their list
// (GET /api/waiting), opens /address.html?id=... with the pages' preview, types or picks the
// numbers and sends it (POST /api/jobs/:id/address) through the same checks as a new fax
// (intake/new-fax.ts: normalised numbers, contacts looked up with the user's key, destination
// policy). Operators list everyone's waiting jobs (GET /api/waiting?all=1); only the owner
// addresses one, as only the owner can say where it goes. The list also holds faxes to a new
// number waiting for their owner's confirmation (web/confirming.ts).
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Clock } from "../clock.js";
import { FaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/types.js";
import type { DestinationCheck } from "../intake/recipients/destination-policy.js";
import { newFaxRecipients } from "../intake/new-fax.js";
import type { Logger } from "../log/logger.js";
import { waitsForAddress, waitsForConfirmation } from "../store/job-state.js";
import type { Job } from "../store/types.js";
import { jobJson } from "../job-json.js";
import type { ConsoleStore } from "./queue-view.js";
import type { Session } from "./sessions.js";

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
}

const WAITING_MAX = 200;

export function addressingRoutes(api: FastifyInstance, deps: AddressingDeps): void {
  const session = (req: FastifyRequest) => (req as FastifyRequest & { session: Session }).session;
  const view = (j: Job) => ({ ...jobJson(j, new Map(), deps.clock.now()), needsAddress: waitsForAddress(j) });

  api.get("/api/waiting", async (req) => {
    const s = session(req);
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
    const s = session(req);
    const job = await deps.ownJob(req);
    if (job.user !== s.user)
      throw new FaxgateError("JOB_STATE", `only ${job.user}, who printed it, can say where this fax goes`, {
        httpStatus: 403,
      });
    if (!waitsForAddress(job))
      throw new FaxgateError(
        "JOB_STATE",
        `job ${job.id} is not waiting for an address (it was sent, cancelled or expired meanwhile)`,
      );
    const body = (req.body ?? {}) as Record<string, unknown>;
    const to = (Array.isArray(body.to) ? body.to : [body.to])
      .filter((x): x is string => typeof x === "string")
      .map((x) => x.slice(0, 200));
    const text = (v: unknown, max: number) => (typeof v === "string" && v.trim() ? v.trim().slice(0, max) : undefined);
    const recipients = await newFaxRecipients({
      to,
      user: s.user,
      defaultCountryCode: deps.defaultCountryCode(),
      destinations: deps.destinations,
      contacts: deps.clientFor(s.user),
    });
    if (recipients.length === 0) throw new FaxgateError("USAGE", "give at least one fax number or contact");
    if (recipients.length > 50)
      throw new FaxgateError("TOO_MANY_RECIPIENTS", `${recipients.length} recipients is over the limit of 50`);
    if (!deps.mayQueue(s.user))
      throw new FaxgateError("USAGE", "too many faxes from you in the last minute; try again shortly", {
        httpStatus: 429,
      });
    const subject = text(body.subject, 200) ?? job.cover.subject;
    const notes = text(body.notes, 4000);
    const coverAsked =
      body.cover === true ||
      (typeof body.cover === "string" && ["on", "true", "1", "yes"].includes(body.cover.toLowerCase()));
    const recipientName = recipients.length === 1 ? recipients[0]!.name : undefined;
    const after = await deps.store.address(job.id, {
      recipients,
      cover: {
        ...job.cover,
        enabled: coverAsked || Boolean(notes),
        ...(subject ? { subject } : {}),
        ...(notes ? { notes } : {}),
        ...(recipientName ? { recipientName } : {}),
      },
    });
    deps.logger.info({ user: s.user, job: job.id, recipients: recipients.length }, "WEB addressed a waiting print job");
    deps.changed();
    return view(after);
  });
}
