// A user's sent faxes (operators: anyone's): the list, one job with its timeline, its documents
// and transmission report, cancel/hold/release/retry, and resend. Another user's job answers as
// a job that does not exist (ConsoleContext.ownJob).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { contentDisposition } from "../content-disposition.js";
import { FaxgateError } from "../errors.js";
import { jobJson, needsNumber } from "../job-json.js";
import { jobReport, reportFileName } from "../notify/index.js";
import { waitsForAddress, refuseControlCharacters, type Job, type NewDocument } from "../store/index.js";
import type { ConsoleContext } from "./context.js";
import { recordConsole } from "./ledger-rows.js";
import { sessionOf } from "./sessions.js";

type Query = Record<string, string | undefined>;

/** The ledger's word for each operation on a job. */
const OP_ACTION = { cancel: "cancelled", hold: "held", release: "released", retry: "resent" } as const;

export const jobRoutes: FastifyPluginAsync<{ ctx: ConsoleContext }> = async (api, { ctx }) => {
  api.get("/api/jobs", async (req, reply) => {
    const s = sessionOf(req);
    const q = req.query as Query;
    const limit = clampInt(q.limit, 1, 200, 25);
    const offset = clampInt(q.offset, 0, 1_000_000, 0);
    refuseControlCharacters("search", q.search);
    const search = q.search?.trim().slice(0, 100) || undefined;
    const everyone = s.admin && q.all === "1";
    const { jobs, total } = await ctx.view.page({ user: everyone ? undefined : s.user, search, limit, offset });
    reply.header("x-total-count", String(total));
    return jobs.map((j) => publicJob(j, ctx.clock.now()));
  });

  api.get("/api/jobs/:id", async (req) => {
    const job = await ctx.ownJob(req);
    const timeline = await ctx.view.events(job);
    await recordConsole(ctx.deps.ledger, req, "viewed", { kind: "job", id: job.id });
    return { ...publicJob(job, ctx.clock.now()), timeline };
  });

  api.get("/api/jobs/:id/documents/:n", async (req, reply) => {
    const job = await ctx.ownJob(req);
    const n = Number((req.params as { n: string }).n);
    const doc = Number.isInteger(n) ? job.documents[n] : undefined;
    if (!doc) return reply.code(404).send({ error: "no such document" });
    const body = await ctx.view.readDocument(doc);
    const how = (req.query as Query).download === "1" ? "attachment" : "inline";
    await recordConsole(
      ctx.deps.ledger,
      req,
      how === "attachment" ? "downloaded" : "previewed",
      {
        kind: "job",
        id: job.id,
      },
      { document: n },
    );
    return reply.type(doc.contentType).header("content-disposition", contentDisposition(how, doc.name)).send(body);
  });

  api.get("/api/jobs/:id/report", async (req, reply) => report(ctx, req, reply));

  for (const op of ["cancel", "hold", "release", "retry"] as const) {
    api.post(`/api/jobs/:id/${op}`, async (req) => {
      const s = sessionOf(req);
      const job = await ctx.ownJob(req);
      if (op === "retry" && !s.admin)
        throw new FaxgateError("JOB_STATE", "only an operator can retry a job; resend it instead");
      // a print waiting for its number is "held" in the store, but only a number sends it
      if (op !== "cancel" && waitsForAddress(job))
        throw new FaxgateError("JOB_STATE", `job ${job.id} ${needsNumber(job)} (${op} does not apply)`);
      // the timeline names who cancelled: the owner, or an operator by name
      const after = await ctx.deps.store.operate(
        job.id,
        op,
        op === "cancel" ? (job.user === s.user ? s.user : `${s.user}, an operator`) : undefined,
      );
      ctx.log.info({ user: s.user, job: job.id, action: op, state: after.state }, `WEB ${op}`);
      await recordConsole(ctx.deps.ledger, req, OP_ACTION[op], { kind: "job", id: job.id });
      ctx.live.poke();
      return publicJob(after, ctx.clock.now());
    });
  }

  api.post("/api/jobs/:id/resend", async (req) => resend(ctx, req));
};

/** The job's transmission report (PDF), as `faxgate report` writes it. */
async function report(ctx: ConsoleContext, req: FastifyRequest, reply: FastifyReply) {
  const job = await ctx.ownJob(req);
  const me = await ctx.deps
    .clientFor(job.user)
    .me()
    .catch(() => null);
  const pdf = await jobReport({
    store: ctx.view,
    job,
    user: ctx.deps.users().find((u) => u.name === job.user),
    me,
    now: new Date(ctx.clock.now()),
    defaultCountryCode: ctx.deps.defaultCountryCode(),
  });
  ctx.log.info({ user: sessionOf(req).user, job: job.id }, "WEB transmission report");
  await recordConsole(ctx.deps.ledger, req, "report-fetched", { kind: "job", id: job.id });
  const how = (req.query as Query).download === "1" ? "attachment" : "inline";
  return reply
    .type("application/pdf")
    .header("content-disposition", `${how}; filename="${reportFileName(job)}"`)
    .send(Buffer.from(pdf));
}

/** The same documents and cover as a new fax, to `to` or else to the same recipients. */
async function resend(ctx: ConsoleContext, req: FastifyRequest) {
  const s = sessionOf(req);
  const job = await ctx.ownJob(req);
  const to = toList(((req.body ?? {}) as Record<string, unknown>).to);
  const numbers = to.length ? to : job.recipients.map((r) => r.number);
  const documents: NewDocument[] = [];
  for (const d of job.documents)
    documents.push({ path: d.path, name: d.name, contentType: d.contentType, data: await ctx.view.readDocument(d) });
  const created = await ctx.submit(s, {
    recipients: await ctx.recipientsOf(s, numbers),
    documents,
    cover: job.cover,
    origin: { via: "web console", resendOf: job.id },
  });
  return publicJob(created, ctx.clock.now());
}

/** A job in the JSON of `faxgate jobs --json`. */
export function publicJob(j: Job, nowMs: number) {
  return jobJson(j, new Map(), nowMs);
}

export function clampInt(v: string | undefined, min: number, max: number, dflt: number): number {
  const n = v === undefined ? Number.NaN : Number(v);
  return Number.isInteger(n) ? Math.min(max, Math.max(min, n)) : dflt;
}

function toList(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === "string");
  return typeof v === "string" && v.trim() ? [v] : [];
}
