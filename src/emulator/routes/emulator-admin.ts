// Emulator-only endpoints under /_emulator (admin key): what the real service does in its web app
// or on the telephone line, so tests can look behind the API and steer it.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalid, notFound } from "../api-error.js";
import { requireAccess } from "../auth.js";
import { account, type Caller, type EmulatorContext } from "../context.js";
import type { FaxRow, UserRow } from "../db.js";
import { buildFaxDocument } from "../document.js";
import { insertFax } from "../fax-store.js";
import { parseDestination } from "../fax-number.js";
import { readInput } from "../request-input.js";
import { renderFax, renderUser } from "../shapes.js";
import { faxState } from "../lifecycle.js";
import { applyBehaviour } from "../behaviour.js";

const PREFS: Record<string, "string" | "bool" | "nullable"> = {
  firstName: "string",
  lastName: "nullable",
  userRole: "string",
  phone: "string",
  faxCsid: "string",
  faxCallerId: "string",
  emailNotifySendOption: "string",
  emailNotifyReceiveOption: "string",
  emailNotifySendIncAttachment: "bool",
  emailNotifyReceiveIncAttachment: "bool",
  emailToFaxCoverPageOption: "bool",
};

type Admin = (req: FastifyRequest) => Caller;

export function emulatorAdminRoutes(
  app: FastifyInstance,
  ctx: EmulatorContext,
  callerOf: (req: FastifyRequest) => Caller,
): void {
  const admin: Admin = (req) => {
    const c = callerOf(req);
    requireAccess(c, "admin");
    return c;
  };
  lookBehindRoutes(app, ctx, admin);
  steeringRoutes(app, ctx, admin);
  lineRoutes(app, ctx, admin);
}

/** What tests read behind the API: every fax, the calls answered, the limits met, webhook deliveries. */
function lookBehindRoutes(app: FastifyInstance, ctx: EmulatorContext, admin: Admin): void {
  app.get("/_emulator/faxes", async (req) => {
    admin(req);
    const now = ctx.clock.now();
    const rows = ctx.db
      .prepare(
        "SELECT f.*, u.email AS email FROM faxes f JOIN users u ON u.uuid = f.userId WHERE f.deletedAt IS NULL ORDER BY f.messageNumber",
      )
      .all() as Array<FaxRow & { email: string }>;
    return rows.map((r) => faxSummary(r, now));
  });

  // API calls answered so far, by method and route (tests and benches count what a path costs)
  const calls = new Map<string, number>();
  app.addHook("onResponse", async (req) => {
    if (req.url.startsWith("/_emulator/")) return;
    const k = `${req.method} ${req.routeOptions.url ?? req.url.split("?")[0]}`;
    calls.set(k, (calls.get(k) ?? 0) + 1);
  });
  app.get("/_emulator/requests", async (req) => {
    admin(req);
    return Object.fromEntries(calls);
  });

  // what each account met from the service's limits: calls, the busiest second, 429s by kind;
  // DELETE starts the count again (a test's measured part)
  app.get("/_emulator/limits", async (req) => {
    admin(req);
    return ctx.accountRate.report();
  });
  app.delete("/_emulator/limits", async (req) => {
    admin(req);
    ctx.accountRate.reset();
    return {};
  });

  // every webhook delivery with its attempts, so tests can check the retry schedule
  app.get("/_emulator/webhook-deliveries", async (req) => {
    admin(req);
    return ctx.webhooks.deliveries();
  });
}

/** One fax as /_emulator/faxes lists it: its owner's e-mail and every field a test checks. */
function faxSummary(r: FaxRow & { email: string }, now: number): Record<string, unknown> {
  return {
    messageId: r.messageId,
    messageNumber: String(r.messageNumber),
    userId: r.userId,
    email: r.email,
    direction: r.direction,
    faxNumber: r.faxNumber,
    status: faxState(r, now).status,
    cf: JSON.parse(r.cf) as Record<string, string>,
    tags: JSON.parse(r.tags) as string[],
    attachments: JSON.parse(r.attachments) as string[],
    coverPage: r.coverPage === 1,
    subject: r.subject,
    recipientName: r.recipientName,
    senderName: r.senderName,
    notes: r.notes,
    callerId: r.faxCallerId,
    pagesCount: r.pagesCount,
    isArchived: r.isArchived === 1,
    resentFrom: r.resentFrom,
    scheduledDate: r.scheduledAt === null ? null : new Date(r.scheduledAt).toISOString(),
    createdAt: new Date(r.createdAt).toISOString(),
  };
}

/** The switches tests turn at run time: faults and the unsettled behaviours. */
function steeringRoutes(app: FastifyInstance, ctx: EmulatorContext, admin: Admin): void {
  app.get("/_emulator/faults", async (req) => {
    admin(req);
    return ctx.faults.get();
  });

  app.put("/_emulator/faults", async (req) => {
    admin(req);
    const settings = ctx.faults.set(req.body);
    ctx.logger.info({ faults: settings }, "faults changed");
    return settings;
  });

  app.get("/_emulator/behaviour", async (req) => {
    admin(req);
    return ctx.behaviour;
  });

  // the switches for unsettled evidence, at run time: any of them; answers the whole behaviour
  app.put("/_emulator/behaviour", async (req) => {
    admin(req);
    ctx.behaviour = applyBehaviour(ctx.behaviour, req.body);
    ctx.logger.info({ behaviour: ctx.behaviour }, "behaviour changed");
    return ctx.behaviour;
  });
}

/** What happens on the telephone line and in the web app: a fax arrives, a user changes settings. */
function lineRoutes(app: FastifyInstance, ctx: EmulatorContext, admin: Admin): void {
  app.post("/_emulator/inbound", async (req) => {
    admin(req);
    const input = await readInput(req, ctx.uploadDir, true);
    try {
      const row = await receiveFax(ctx, input);
      ctx.logger.info({ messageId: row.messageId, userId: row.userId }, "inbound fax created");
      return renderFax(row, ctx.clock.now(), { cfMode: ctx.behaviour.cfMode, tags: [], contacts: [] });
    } finally {
      await input.cleanup();
    }
  });

  app.patch<{ Params: { email: string } }>("/_emulator/users/:email", async (req) => {
    admin(req);
    const user = ctx.db.prepare("SELECT * FROM users WHERE email = ?").get(req.params.email) as UserRow | undefined;
    if (!user) throw notFound(`user ${req.params.email} not found`);
    const body = req.body;
    if (!body || typeof body !== "object") throw invalid("send a JSON object of user fields");
    const values = userFields(body as Record<string, unknown>);
    const sets = Object.keys(values).map((k) => `${k} = @${k}`);
    if (sets.length)
      ctx.db.prepare(`UPDATE users SET ${sets.join(", ")} WHERE uuid = @uuid`).run({ ...values, uuid: user.uuid });
    const fresh = ctx.db.prepare("SELECT * FROM users WHERE uuid = ?").get(user.uuid) as UserRow;
    return renderUser(fresh, account(ctx), ctx.variant);
  });
}

/**
 * An inbound fax for the user named by `userId` or `email`, or else the user whose number `to` is,
 * from `callerId`, of the files sent. The fax is that user's: its info names them in `users` and
 * an admin key's history shows it with every other user's (fax-api.md: `users` in fax info, admin
 * keys over the whole account). How the real service assigns numbers to users is not shown
 * (`faxNumbers`' elements are not described), so a user's number here is their `phone`.
 */
async function receiveFax(ctx: EmulatorContext, input: Awaited<ReturnType<typeof readInput>>): Promise<FaxRow> {
  const userId = input.one("userId");
  const email = input.one("email");
  const to = input.one("to");
  if (!userId && !email && !to) throw invalid("userId, email or to is required");
  const user = (
    userId
      ? ctx.db.prepare("SELECT * FROM users WHERE uuid = ?").get(userId)
      : email
        ? ctx.db.prepare("SELECT * FROM users WHERE email = ?").get(email)
        : userOfNumber(ctx, to!)
  ) as UserRow | undefined;
  if (!user) throw notFound(userId || email ? `user ${userId ?? email} not found` : "no user has the number to");
  const callerId = input.one("callerId");
  if (!callerId) throw invalid("callerId is required");
  const from = parseDestination(callerId);
  // as the service records it: faxNumber is the fax's destination, the number the sender
  // dialled (one of the account's numbers: `to`, else the user's own), the caller id the sender
  const dialled = to ? parseDestination(to) : parseDestination(user.phone);
  if (input.files.length === 0) throw invalid("file is required");
  const doc = await buildFaxDocument(
    null,
    input.files.map((f) => ({ path: f.path, filename: f.filename, mimetype: f.mimetype })),
  );
  return insertFax(
    ctx,
    {
      user,
      direction: "inbound",
      channelType: "fax",
      faxNumber: dialled,
      callerId: from.replace(/^\+/, ""),
      csid: input.one("csid") ?? "",
      attachments: input.files.map((f) => f.filename),
      pagesCount: doc.pages,
    },
    { bytes: doc.pdf },
  );
}

/** The one user whose number (`phone`) `to` is; several is a question the caller must settle. */
function userOfNumber(ctx: EmulatorContext, to: string): UserRow | undefined {
  const number = parseDestination(to);
  const users = (ctx.db.prepare("SELECT * FROM users").all() as UserRow[]).filter((u) => {
    try {
      return parseDestination(u.phone) === number;
    } catch {
      return false;
    }
  });
  if (users.length > 1) throw invalid("several users have the number to: name one by userId or email");
  return users[0];
}

/** The user fields in `body` as stored (booleans as 0/1); a field not in PREFS or of the wrong kind is refused. */
function userFields(body: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    const kind = PREFS[k];
    if (!kind) throw invalid(`"${k}" is not a user field this endpoint changes (${Object.keys(PREFS).join(", ")})`);
    if (kind === "bool") {
      if (typeof v !== "boolean" && v !== "true" && v !== "false") throw invalid(`${k} must be true or false`);
      values[k] = v === true || v === "true" ? 1 : 0;
    } else if (kind === "nullable" && v === null) {
      values[k] = null;
    } else {
      if (typeof v !== "string" || (kind === "string" && v.trim() === ""))
        throw invalid(`${k} must be a non-empty string`);
      values[k] = v;
    }
  }
  return values;
}
