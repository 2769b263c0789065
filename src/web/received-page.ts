// The one received-fax page's data (web/inbound.html): the facts the mail gives (sender number,
// CSID, the number dialled, when, pages), the route taken, the timeline and the document, for
// everyone a received fax was mailed to. Whoever may open it: the user it was received for, the
// members of the group inboxes it is in, anyone a notification about it was queued for (a rule's
// `users`, a forward by mail, an escalation) or whose address a rule mailed it to (a shared
// mailbox), and operators. Anyone else gets the answer a fax that does not exist gets (404).
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { InboundConfig, UserConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import { faxNumber, pages } from "../format.js";
import type { Logger } from "../log/index.js";
import { type QueueStore, type ReceivedStore, deliverAgain, listDeliveries } from "../store/index.js";
import type { ReceivedFax } from "../received/index.js";
import type { Ledger } from "../ledger/index.js";
import { recordConsole } from "./ledger-rows.js";
import { sessionOf, type Session } from "./sessions.js";
import { groupsOf } from "./shared-inbox.js";

export interface ReceivedPageDeps {
  store: ReceivedStore & Pick<QueueStore, "listNotifications" | "sql">;
  /** absent: no shared inboxes */
  inbound?: () => InboundConfig;
  users: () => readonly UserConfig[];
  defaultCountryCode: () => string;
  logger: Logger;
  ledger: Pick<Ledger, "record">;
}

/** Why this person may open this fax, or null when they may not. */
export async function readerOf(deps: ReceivedPageDeps, fax: ReceivedFax, s: Session): Promise<string | null> {
  if (fax.user === s.user) return "receiver";
  const mine = deps.inbound ? groupsOf(deps.inbound(), s.user) : [];
  if (fax.groups.some((g) => mine.includes(g))) return "member";
  const about = (n: { payload: unknown }) => {
    const p = n.payload as { receivedId?: string; messageId?: string };
    return p.receivedId === fax.id || p.messageId === fax.messageId;
  };
  if ((await deps.store.listNotifications({ kind: "inbound", user: s.user })).some(about)) return "mailed";
  // a rule's `mail:` address (a shared mailbox) is queued under the receiving user with `to`
  const me = deps.users().find((u) => u.name === s.user);
  const addresses = new Set([me?.email, ...(me?.aliases ?? [])].filter(Boolean).map((a) => a!.toLowerCase()));
  if (addresses.size) {
    const mailed = await deps.store.listNotifications({ kind: "inbound", user: fax.user });
    if (mailed.some((n) => about(n) && addresses.has(String((n.payload as { to?: string }).to).toLowerCase())))
      return "mailbox";
  }
  if (s.admin) return "operator";
  return null;
}

/** The fax by its gateway id or by the service's message id (links mailed before it was kept). */
async function findFax(store: ReceivedStore, id: string): Promise<ReceivedFax | null> {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(id)) return null;
  return (await store.getReceived(id)) ?? (await store.listReceived({ messageId: id, limit: 1 }))[0] ?? null;
}

/** The page's fax: its facts in the words every surface uses, its route, timeline and deliveries. */
async function receivedView(deps: ReceivedPageDeps, fax: ReceivedFax, s: Session, why: string) {
  const timeline = await deps.store.listReceivedEvents(fax.id);
  const cc = deps.defaultCountryCode();
  const mine = deps.inbound ? groupsOf(deps.inbound(), s.user) : [];
  return {
    id: fax.id,
    messageId: fax.messageId,
    user: fax.user,
    // the words every surface uses (src/format.ts); the raw values beside them for scripts
    from: faxNumber(fax.sender, cc),
    sender: fax.sender,
    csid: fax.csid,
    dialled: faxNumber(fax.dialled, cc),
    dialledNumber: fax.dialled,
    receivedAt: fax.receivedAt,
    pages: fax.pages,
    pagesText: pages(fax.pages),
    status: fax.status,
    groups: fax.groups,
    state: fax.state,
    owner: fax.owner,
    note: fax.note,
    hasDocument: fax.hasDocument,
    route: timeline
      .filter((e) => e.action === "routed")
      .map((e) => e.detail)
      .join("; "),
    timeline,
    // its connector deliveries (docs/connectors.md): where, how it went, why not
    deliveries: (await listDeliveries(deps.store.sql, { faxId: fax.id })).map((d) => ({
      id: d.id,
      kind: d.kind,
      target: d.target,
      state: d.state,
      attempts: d.attempts,
      lastError: d.lastError,
      result: d.result,
      deliveredAt: d.deliveredAt,
      // the fax's own user and operators may send a failed one again
      canRetry: d.state === "failed" && (why === "receiver" || s.admin),
    })),
    // the inbox's actions (take, done, note, forward) are a member's; others read
    canAct: fax.groups.some((g) => mine.includes(g)),
    access: why,
  };
}

export const receivedPageRoutes: FastifyPluginAsync<ReceivedPageDeps> = async (api, deps) => {
  const open = async (req: FastifyRequest) => {
    const s = sessionOf(req);
    const fax = await findFax(deps.store, (req.params as { id: string }).id);
    const why = fax ? await readerOf(deps, fax, s) : null;
    if (!fax || !why) {
      if (fax) deps.logger.warn({ user: s.user, received: fax.id }, "WEB refused: a received fax not theirs");
      throw new FaxgateError("JOB_NOT_FOUND", "no received fax with this id among the ones you may see");
    }
    return { s, fax, why };
  };

  api.get("/api/received/:id", async (req) => {
    const { s, fax, why } = await open(req);
    // recorded after the view is read, as before: the timeline shown is the one before this visit
    const view = await receivedView(deps, fax, s, why);
    await recordConsole(deps.ledger, req, "viewed", { kind: "received", id: fax.id });
    return view;
  });

  api.post("/api/received/:id/deliveries/:delivery/again", async (req, reply) => {
    const { s, fax, why } = await open(req);
    const id = (req.params as { delivery: string }).delivery;
    const row = (await listDeliveries(deps.store.sql, { faxId: fax.id })).find((d) => d.id === id);
    if (!row) return reply.code(404).send({ error: "this fax has no such delivery" });
    if (why !== "receiver" && !s.admin)
      return reply.code(403).send({ error: "only the fax's own user or an operator may deliver it again" });
    const again = await deliverAgain(deps.store.sql, row.id, s.user);
    if (!again) return reply.code(409).send({ error: `the delivery is ${row.state}, not failed` });
    deps.logger.info({ user: s.user, received: fax.id, delivery: row.id }, "WEB delivery asked again");
    return { id: again.id, state: again.state };
  });

  api.get("/api/received/:id/pdf", async (req, reply) => {
    const { s, fax } = await open(req);
    const body = await deps.store.readReceivedDocument(fax.id);
    if (!body) return reply.code(404).send({ error: "this fax has no document" });
    deps.logger.info({ user: s.user, received: fax.id }, "WEB received fax viewed");
    const q = req.query as Record<string, string | undefined>;
    await recordConsole(deps.ledger, req, q.download === "1" ? "downloaded" : "previewed", {
      kind: "received",
      id: fax.id,
    });
    return reply
      .type("application/pdf")
      .header("content-disposition", `${q.download === "1" ? "attachment" : "inline"}; filename="fax-${fax.id}.pdf"`)
      .send(body);
  });
};
