// The console's shared inbox (docs/inbound.md): the received faxes of the groups a user belongs to
// (inbound.groups), with "take it", done, a note, and forward by fax or to a configured user's mail.
// A fax outside the user's groups answers as one that does not exist (404). Every action is an
// entry in the fax's timeline, with who did it.
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { InboundConfig, UserConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import { faxNumber } from "../format.js";
import type { Logger } from "../log/index.js";
import type { Job, NewDocument, ReceivedStore, QueueStore } from "../store/index.js";
import { type ReceivedFax, keptFaxPayload } from "../received/index.js";
import type { Ledger } from "../ledger/index.js";
import { recordConsole } from "./ledger-rows.js";
import { sessionOf, type Session } from "./sessions.js";

export interface SharedInboxDeps {
  store: ReceivedStore & Pick<QueueStore, "enqueueNotification">;
  inbound: () => InboundConfig;
  users: () => readonly UserConfig[];
  logger: Logger;
  /** each view, download, take, give-back and forward is a row (docs/compliance.md) */
  ledger: Pick<Ledger, "record">;
  /** The console's own fax submission (checks, rate, destination policy). */
  submitFax: (s: Session, to: string[], documents: NewDocument[], origin: Record<string, string>) => Promise<Job>;
  poke: () => void;
}

export function groupsOf(cfg: InboundConfig, user: string): string[] {
  return Object.entries(cfg.groups)
    .filter(([, g]) => g.members.includes(user))
    .map(([name]) => name);
}

function view(f: ReceivedFax) {
  return {
    id: f.id,
    messageId: f.messageId,
    user: f.user,
    // as every surface writes a number (src/format.ts); the raw ones beside them
    dialled: faxNumber(f.dialled),
    dialledNumber: f.dialled,
    from: faxNumber(f.sender),
    sender: f.sender,
    csid: f.csid,
    pages: f.pages,
    status: f.status,
    receivedAt: f.receivedAt,
    groups: f.groups,
    state: f.state,
    owner: f.owner,
    note: f.note,
    escalatedAt: f.escalatedAt,
    hasDocument: f.hasDocument,
  };
}

/** The fax named in the URL when it is in one of the user's groups (else the 404 of no fax). */
async function mine(deps: SharedInboxDeps, req: FastifyRequest): Promise<{ s: Session; fax: ReceivedFax }> {
  const s = sessionOf(req);
  const id = (req.params as { id: string }).id;
  const fax = /^[A-Za-z0-9_-]{1,100}$/.test(id) ? await deps.store.getReceived(id) : null;
  const groups = groupsOf(deps.inbound(), s.user);
  if (!fax?.groups.some((g) => groups.includes(g)))
    throw new FaxgateError("JOB_NOT_FOUND", "no such fax in your inboxes");
  return { s, fax };
}

const LEDGER_ACTION: Readonly<Record<string, "taken" | "released" | "forwarded">> = {
  taken: "taken",
  released: "released",
  forwarded: "forwarded",
};

/** The fax after an action, or the refusal when the store's guard found it changed meanwhile. */
async function changed(
  deps: SharedInboxDeps,
  req: FastifyRequest,
  s: Session,
  fax: ReceivedFax | null,
  action: string,
  rows: readonly { detail: Record<string, string | number | boolean>; number?: string }[] = [{ detail: {} }],
) {
  if (!fax)
    throw new FaxgateError(
      "JOB_STATE",
      action === "taken" ? "someone else has taken this fax already" : `this fax cannot be ${action} now`,
      { httpStatus: 409 },
    );
  // the ledger's names for the inbox's actions ("done" and a note are the fax's timeline only)
  const ledgerAction = LEDGER_ACTION[action];
  if (ledgerAction)
    for (const r of rows)
      await deps.ledger.record({
        action: ledgerAction,
        actor: { kind: s.admin ? "operator" : "person", id: s.user },
        object: { kind: "received", id: fax.id },
        door: "console",
        client: req.ip,
        ...(r.number ? { number: r.number } : {}),
        detail: r.detail,
      });
  deps.logger.info({ user: s.user, received: fax.id, action }, `WEB inbox ${action}`);
  deps.poke();
  return view(fax);
}

function textOf(body: unknown, key: string, max: number): string {
  const v = (body as Record<string, unknown> | null)?.[key];
  return typeof v === "string" ? v.trim().slice(0, max) : "";
}

/** The inbox, one fax and its PDF; the actions are in `inboxActions`. */
export const sharedInboxRoutes: FastifyPluginAsync<SharedInboxDeps> = async (api, deps) => {
  api.get("/api/inbox", async (req) => {
    const s = sessionOf(req);
    const groups = groupsOf(deps.inbound(), s.user);
    const q = req.query as Record<string, string | undefined>;
    const states =
      q.state === "all" ? undefined : q.state === "done" ? (["done"] as const) : (["new", "taken"] as const);
    const faxes = await deps.store.listReceived({ groups, states: states ? [...states] : undefined, limit: 200 });
    return { groups, faxes: faxes.map(view) };
  });

  api.get("/api/inbox/:id", async (req) => {
    const { fax } = await mine(deps, req);
    await recordConsole(deps.ledger, req, "viewed", { kind: "received", id: fax.id }, { via: "inbox" });
    return { ...view(fax), timeline: await deps.store.listReceivedEvents(fax.id) };
  });

  api.get("/api/inbox/:id/pdf", async (req, reply) => {
    const { s, fax } = await mine(deps, req);
    const body = await deps.store.readReceivedDocument(fax.id);
    if (!body) return reply.code(404).send({ error: "this fax has no document" });
    const q = req.query as Record<string, string | undefined>;
    await recordConsole(deps.ledger, req, q.download === "1" ? "downloaded" : "previewed", {
      kind: "received",
      id: fax.id,
    });
    deps.logger.info({ user: s.user, received: fax.id }, "WEB inbox fax viewed");
    return reply
      .type("application/pdf")
      .header("content-disposition", `${q.download === "1" ? "attachment" : "inline"}; filename="fax-${fax.id}.pdf"`)
      .send(body);
  });

  await api.register(inboxActions, deps);
};

/** Take, give back, done, a note, and forward: each an entry in the fax's timeline. */
const inboxActions: FastifyPluginAsync<SharedInboxDeps> = async (api, deps) => {
  api.post("/api/inbox/:id/take", async (req) => {
    const { s, fax } = await mine(deps, req);
    return changed(
      deps,
      req,
      s,
      await deps.store.changeReceived(fax.id, {
        set: { state: "taken", owner: s.user },
        expect: ["new"],
        event: { action: "taken", actor: s.user, detail: null },
      }),
      "taken",
    );
  });

  api.post("/api/inbox/:id/release", async (req) => {
    const { s, fax } = await mine(deps, req);
    if (fax.owner !== s.user)
      throw new FaxgateError("JOB_STATE", "only its owner can give a fax back", { httpStatus: 409 });
    return changed(
      deps,
      req,
      s,
      await deps.store.changeReceived(fax.id, {
        set: { state: "new", owner: null },
        expect: ["taken"],
        event: { action: "released", actor: s.user, detail: null },
      }),
      "released",
    );
  });

  api.post("/api/inbox/:id/done", async (req) => {
    const { s, fax } = await mine(deps, req);
    // done by whoever finishes it; an untaken fax becomes theirs
    return changed(
      deps,
      req,
      s,
      await deps.store.changeReceived(fax.id, {
        set: { state: "done", owner: fax.owner ?? s.user },
        expect: ["new", "taken"],
        event: { action: "done", actor: s.user, detail: null },
      }),
      "done",
    );
  });

  api.post("/api/inbox/:id/note", async (req) => {
    const { s, fax } = await mine(deps, req);
    const note = textOf(req.body, "note", 2000);
    return changed(
      deps,
      req,
      s,
      await deps.store.changeReceived(fax.id, {
        set: { note: note || null },
        event: { action: "note", actor: s.user, detail: note || "(note removed)" },
      }),
      "noted",
    );
  });

  api.post("/api/inbox/:id/forward", async (req) => forward(deps, req));
};

/** Forward by fax (the console's own submission) or by mail to a configured user. */
async function forward(deps: SharedInboxDeps, req: FastifyRequest) {
  const { s, fax } = await mine(deps, req);
  const body = req.body as Record<string, unknown> | null;
  const user = textOf(body, "user", 100);
  const to = textOf(body, "to", 400)
    .split(/[,;\n]/)
    .map((x) => x.trim())
    .filter(Boolean);
  if (!fax.hasDocument) throw new FaxgateError("USAGE", "this fax has no document to forward");
  if (user) {
    // by mail only to a configured user: nothing leaves for an address no one configured
    const u = deps.users().find((x) => x.name === user);
    if (!u) throw new FaxgateError("USAGE", `"${user}" is not a user of this gateway`);
    await deps.store.enqueueNotification({
      kind: "inbound",
      user: u.name,
      jobId: null,
      dedupeKey: `forward:${fax.id}:${u.name}:${Date.now()}`,
      payload: keptFaxPayload(fax, { to: u.email }),
    });
    return changed(
      deps,
      req,
      s,
      await deps.store.changeReceived(fax.id, {
        set: {},
        event: { action: "forwarded", actor: s.user, detail: `by mail to ${u.name}` },
      }),
      "forwarded",
      [{ detail: { by: "mail", to: u.name } }],
    );
  }
  if (to.length === 0) throw new FaxgateError("USAGE", "give fax numbers (to) or a user (user) to forward to");
  const data = (await deps.store.readReceivedDocument(fax.id))!;
  const job = await deps.submitFax(
    s,
    to,
    [{ path: `received-${fax.id}.pdf`, name: `fax-${fax.id}.pdf`, contentType: "application/pdf", data }],
    { via: "web console", forwardOf: fax.id },
  );
  return changed(
    deps,
    req,
    s,
    await deps.store.changeReceived(fax.id, {
      set: {},
      event: { action: "forwarded", actor: s.user, detail: `by fax to ${to.join(", ")} (job ${job.id})` },
    }),
    "forwarded",
    // one row per number, each only as its keyed hash
    job.recipients.map((r) => ({ detail: { by: "fax", job: job.id }, number: r.number })),
  );
}
