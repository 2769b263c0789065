// The door of every link faxgate mails (docs/compliance.md): `/m?k=KIND&id=...&t=...` (url-check.ts
// mailedLinkQuery), where t is when the mail was written and KIND the page it leads to: a sent
// fax (job), a received fax (received), a print waiting for its number (address), a fax to a new
// number waiting for its owner (confirm). A click is a ledger row (door link) before anything is
// shown; the link then leads to the console page, which asks for sign-in and decides who may see
// or act on the fax. A link older than retention.links, or to a fax purged under the retention
// rule, stops working (410): the mail outlives the copy it pointed at. The click's row names no
// person unless the browser is signed in already (a mail reader is not yet proved to be anyone,
// STYLE habit 20); the page's own read, after sign-in, is the person's row. t is not signed: a
// hand-edited time only reaches the same sign-in and the same rules a typed console address does.
import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../clock.js";
import type { Ledger } from "../ledger/index.js";
import type { ConsoleStore } from "./queue-view.js";

export interface MailedLinkDeps {
  store: Pick<ConsoleStore, "getJob" | "getReceived">;
  ledger: Pick<Ledger, "record">;
  /** retention.links as it is now, ms; null: forever */
  lifetime: () => number | null;
  clock: Clock;
}

/** Each kind of mailed link: the console page it leads to, and the kind of object it names. */
const PAGE = {
  job: { page: "fax.html", object: "job" },
  received: { page: "inbound.html", object: "received" },
  address: { page: "address.html", object: "job" },
  confirm: { page: "confirm.html", object: "job" },
} as const;
export type MailedLinkKind = keyof typeof PAGE;
const isKind = (k: string | undefined): k is MailedLinkKind => k !== undefined && Object.hasOwn(PAGE, k);
const ID = /^[A-Za-z0-9_-]{1,100}$/;

export const mailedLinkRoutes: FastifyPluginAsync<MailedLinkDeps> = async (app, deps) => {
  app.get("/m", async (req, reply) => {
    const q = req.query as Record<string, string | undefined>;
    const kind = isKind(q.k) ? q.k : null;
    const id = q.id && ID.test(q.id) ? q.id : null;
    const mailedAt = q.t && /^\d{1,12}$/.test(q.t) ? Number(q.t) * 1000 : null;
    if (!kind || !id || mailedAt === null) return gone(reply, 404, "This is not a link faxgate mailed.");
    const session = req.session?.user ? { user: req.session.user, admin: Boolean(req.session.admin) } : null;
    const life = deps.lifetime();
    const expired = life !== null && deps.clock.now() - mailedAt > life;
    const object = PAGE[kind].object;
    const there =
      object === "job"
        ? (await deps.store.getJob(id)) !== null
        : (await deps.store.getReceived(id))?.hasDocument === true;
    // recorded whether it works or not: a late click on a purged fax is an event too
    await deps.ledger.record({
      action: "viewed",
      actor: session ? { kind: session.admin ? "operator" : "person", id: session.user } : { kind: "person" },
      object: { kind: object, id },
      door: "link",
      client: req.ip,
      // which page it led to, where one fax has several (its outcome, its address, its confirmation)
      detail: {
        result: expired ? "expired" : there ? "followed" : "purged",
        ...(kind !== object ? { link: kind } : {}),
      },
    });
    if (expired)
      return gone(reply, 410, "This link has expired (retention.links). Sign in to the console to find the fax.");
    if (!there) return gone(reply, 410, "The fax this link pointed at was deleted under the retention rule.");
    return reply.redirect(`${PAGE[kind].page}?id=${encodeURIComponent(id)}`, 302);
  });
};

function gone(reply: import("fastify").FastifyReply, code: number, text: string) {
  return reply
    .code(code)
    .type("text/html; charset=utf-8")
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>faxgate</title></head><body><h1>Link not available</h1><p>${text}</p><p><a href="login.html">Sign in</a></p></body></html>`,
    );
}
