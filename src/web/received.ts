// Received faxes in the console: the user's own from the fax service's history, fetched with their
// key (GET /api/inbound, and one PDF), and, registered from here, the faxes the gateway kept: the
// one received-fax page (received-page.ts) and the groups' shared inbox (shared-inbox.ts).
import { mkdtemp, readFile, rm } from "node:fs/promises";
import path from "node:path";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { contentDisposition } from "../content-disposition.js";
import { isNotShown } from "../fax/index.js";
import { faxNumber } from "../format.js";
import type { ConsoleContext } from "./context.js";
import { clampInt } from "./jobs.js";
import { recordConsole } from "./ledger-rows.js";
import { receivedPageRoutes } from "./received-page.js";
import { sessionOf } from "./sessions.js";
import { searchRoutes } from "./search.js";
import { sharedInboxRoutes } from "./shared-inbox.js";

// calls of the account's history budget the console leaves to status polling and reconciliation
const HISTORY_RESERVE = 3;
const CACHED_PAGES = 1000;

export const receivedRoutes: FastifyPluginAsync<{ ctx: ConsoleContext }> = async (api, { ctx }) => {
  const { deps } = ctx;
  const inboundCache = new Map<string, { value: unknown }>();
  const inbound = deps.inbound;
  if (inbound) {
    await api.register(sharedInboxRoutes, {
      store: deps.store,
      inbound,
      users: deps.users,
      logger: ctx.log,
      ledger: deps.ledger,
      submitFax: async (s, to, documents, origin) =>
        ctx.submit(s, { recipients: await ctx.recipientsOf(s, to), documents, cover: { enabled: false }, origin }),
      poke: () => ctx.live.poke(),
    });
  }
  await api.register(searchRoutes, {
    store: deps.store,
    ledger: deps.ledger,
    inbound: deps.inbound,
    defaultCountryCode: deps.defaultCountryCode,
  });
  await api.register(receivedPageRoutes, {
    store: deps.store,
    ledger: deps.ledger,
    inbound: deps.inbound,
    users: deps.users,
    defaultCountryCode: deps.defaultCountryCode,
    logger: ctx.log,
  });

  api.get("/api/inbound", async (req, reply) => {
    const s = sessionOf(req);
    const q = req.query as Record<string, string | undefined>;
    const limit = clampInt(q.limit, 1, 100, 25);
    const offset = clampInt(q.offset, 0, 100_000, 0);
    // history calls share the account's small budget with status polling: the console asks
    // only while a few calls are left for the dispatcher, else shows its last answer
    const key = `${s.user}:${limit}:${offset}`;
    const cached = inboundCache.get(key);
    if (deps.historyAvailable && !deps.historyAvailable(HISTORY_RESERVE)) {
      if (cached) return cached.value;
      return reply.code(503).send({
        error: "the fax service's history is rate-limited just now; received faxes show again in a minute",
      });
    }
    const page = await deps.clientFor(s.user).history({ direction: "inbound", limit, offset });
    const cc = deps.defaultCountryCode();
    const value = {
      total: page.count,
      faxes: page.rows.map((r) => ({
        messageId: r.messageId,
        from: faxNumber(r.faxCallerId, cc) ?? r.faxCsid ?? null,
        to: faxNumber(r.faxNumber, cc),
        status: r.status,
        pages: r.pagesCount ?? null,
        receivedAt: r.createdAt ?? null,
      })),
    };
    inboundCache.delete(key);
    inboundCache.set(key, { value });
    if (inboundCache.size > CACHED_PAGES) inboundCache.delete(inboundCache.keys().next().value!);
    return value;
  });

  api.get("/api/inbound/:messageId/pdf", async (req, reply) => inboundPdf(ctx, req, reply));
};

/** One received fax's PDF, fetched with the user's own key (the service answers only for theirs). */
async function inboundPdf(ctx: ConsoleContext, req: FastifyRequest, reply: FastifyReply) {
  const s = sessionOf(req);
  const id = (req.params as { messageId: string }).messageId;
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(id)) return reply.code(404).send({ error: "no such fax" });
  const dir = await mkdtemp(path.join(await ctx.scratch(), "in-"));
  try {
    const file = path.join(dir, "fax.pdf");
    // the user's own key: the service answers only for their own faxes
    try {
      await ctx.deps.clientFor(s.user).downloadFax(id, file);
    } catch (err) {
      if (isNotShown(err)) return reply.code(404).send({ error: "no such fax" });
      throw err;
    }
    const body = await readFile(file);
    const how = (req.query as Record<string, string | undefined>).download === "1" ? "attachment" : "inline";
    // a fax of the service's history, not one the gateway kept: the object is its service id
    await recordConsole(
      ctx.deps.ledger,
      req,
      how === "attachment" ? "downloaded" : "previewed",
      {
        kind: "received",
        id: id,
      },
      { at: "service" },
    );
    ctx.log.info({ user: s.user, messageId: id }, "WEB downloaded an inbound fax");
    return reply
      .type("application/pdf")
      .header("content-disposition", contentDisposition(how, `fax-${id}.pdf`))
      .send(body);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
