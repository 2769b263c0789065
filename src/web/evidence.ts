// The evidence bundle of a sent fax, for its owner and operators (ConsoleContext.ownJob): the same
// signed zip `faxgate evidence` writes. A POST with the CSRF token, not a link: each bundle made is
// a ledger row, so another site must not be able to make one in the user's name.
import type { FastifyPluginAsync } from "fastify";
import { contentDisposition } from "../content-disposition.js";
import type { EvidenceMaker } from "../evidence/index.js";
import { FaxgateError } from "../errors.js";
import type { ConsoleContext } from "./context.js";
import { sessionOf } from "./sessions.js";

export const evidenceRoutes: FastifyPluginAsync<{ ctx: ConsoleContext; evidence: EvidenceMaker }> = async (
  api,
  { ctx, evidence },
) => {
  api.post("/api/jobs/:id/evidence", async (req, reply) => {
    const s = sessionOf(req);
    const job = await ctx.ownJob(req);
    const asked = (req.query as Record<string, string | undefined>).recipient;
    const recipient = asked === undefined || asked === "" ? undefined : Number(asked);
    if (recipient !== undefined && !(Number.isInteger(recipient) && recipient >= 1))
      throw new FaxgateError("USAGE", "recipient must be a whole number from 1 (the first recipient)");
    const made = await evidence.make(job, {
      ...(recipient ? { recipient } : {}),
      actor: job.user === s.user ? { kind: "person", id: s.user } : { kind: "operator", id: s.user },
      door: "console",
      client: req.ip,
    });
    ctx.log.info({ user: s.user, job: job.id, manifest: made.manifestSha256 }, "WEB evidence bundle");
    return reply
      .type("application/zip")
      .header("content-disposition", contentDisposition("attachment", made.fileName))
      .send(Buffer.from(made.zip));
  });
};
