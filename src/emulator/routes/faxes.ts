// Sending and handling faxes: send, send to many, resend, archive, delete, download, info.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, invalid, notFound } from "../api-error.js";
import { requireAccess } from "../auth.js";
import { account, userById, type Caller, type EmulatorContext } from "../context.js";
import type { ContactRow, FaxRow, UserRow } from "../db.js";
import { contactsOf, deleteFax, insertFax, tagsOf, visibleFax } from "../fax-store.js";
import { parseDestination } from "../fax-number.js";
import { readInput } from "../request-input.js";
import { buildDocument, NOTHING_TO_FAX, nothingToFax, readSendSpec, type SendSpec } from "../send-spec.js";
import { renderFax } from "../shapes.js";

type CallerOf = (req: FastifyRequest) => Caller;

/** One document for all recipients when no cover page names them (or the error building it). */
interface SharedDoc {
  doc?: { pdf: Uint8Array; pages: number };
  error?: ApiError;
}

/**
 * One recipient's refusal in send-to-many and resend, in the shape the recipientErrorShape switch
 * picks: `{input:{faxNumber},error}` (seen from the real service) or the documented
 * `{error,recipientFax}`. A contact that cannot be used is named by `contactId` in the input shape.
 */
type RecipientError = Record<string, unknown>;

function recipientError(
  ctx: EmulatorContext,
  error: string,
  target: { faxNumber?: string; contactId?: string },
): RecipientError {
  if (ctx.behaviour.recipientErrorShape === "recipientFax")
    return { error, recipientFax: target.faxNumber ?? target.contactId ?? "" };
  return {
    input: target.faxNumber !== undefined ? { faxNumber: target.faxNumber } : { contactId: target.contactId },
    error,
  };
}

type Input = Awaited<ReturnType<typeof readInput>>;

export function faxRoutes(app: FastifyInstance, ctx: EmulatorContext, callerOf: CallerOf): void {
  sendRoutes(app, ctx, callerOf);
  faxRecordRoutes(app, ctx, callerOf);
}

/**
 * A fax as the service shows it in lists and creation answers. A creation answer shows the fax as
 * it was created ("A new send returns processing", fax-api.md), however long the answer took to
 * leave; everything else shows it as it is now.
 */
function renderer(ctx: EmulatorContext, at: "created" | "now" = "now"): (row: FaxRow) => Record<string, unknown> {
  return (row) =>
    renderFax(row, at === "created" ? row.createdAt : ctx.clock.now(), {
      cfMode: ctx.behaviour.cfMode,
      tags: tagsOf(ctx, row),
      contacts: contactsOf(ctx, row),
    });
}

/** After a creation call did its work: maybe lose the answer on purpose (the "drop" fault). */
function answerCreated(ctx: EmulatorContext, req: FastifyRequest, reply: FastifyReply, body: unknown) {
  if (ctx.faults.dropAfterCreate()) {
    ctx.logger.info({ url: req.url }, "fault: dropping the connection after creating the fax");
    reply.hijack();
    req.raw.socket.destroy();
    return reply;
  }
  return reply.send(body);
}

/** Creation: send, send to many, resend. */
function sendRoutes(app: FastifyInstance, ctx: EmulatorContext, callerOf: CallerOf): void {
  const render = renderer(ctx, "created");

  app.post("/v1/faxes", async (req, reply) => {
    const caller = callerOf(req);
    const input = await readInput(req, ctx.uploadDir, true);
    try {
      const spec = readSendSpec(ctx, caller, input);
      const raw = input.one("faxNumber");
      if (!raw) throw invalid("faxNumber is required");
      const faxNumber = parseDestination(raw);
      if (nothingToFax(spec, input)) throw invalid(NOTHING_TO_FAX);
      const row = await createFor(ctx, spec, input, faxNumber, null, {});
      ctx.logger.info({ messageId: row.messageId, userId: row.userId, pages: row.pagesCount }, "fax created");
      return answerCreated(ctx, req, reply, render(row));
    } finally {
      await input.cleanup();
    }
  });

  app.post("/v1/faxes/multiple", async (req, reply) => {
    const caller = callerOf(req);
    const input = await readInput(req, ctx.uploadDir, true);
    try {
      const answer = await sendToMany(ctx, caller, input);
      ctx.logger.info({ created: answer.success.length, refused: answer.errors.length }, "faxes created (multiple)");
      return answerCreated(ctx, req, reply, answer);
    } finally {
      await input.cleanup();
    }
  });

  app.post("/v1/fax/resend", async (req, reply) => {
    const caller = callerOf(req);
    const input = await readInput(req, ctx.uploadDir, false);
    const messageId = input.one("messageId")?.trim();
    if (!messageId) throw invalid("messageId is required");
    const old = visibleFax(ctx, caller, messageId);
    const success: Record<string, unknown>[] = [];
    const errors: RecipientError[] = [];
    const raws = input.list("recipientFax");
    for (const raw of raws.length > 0 ? raws : [old.faxNumber]) {
      let faxNumber: string;
      try {
        faxNumber = parseDestination(raw);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        errors.push(recipientError(ctx, `${err.kind}: ${err.message}`, { faxNumber: raw }));
        continue;
      }
      success.push(render(await resendTo(ctx, caller, old, faxNumber)));
    }
    return answerCreated(ctx, req, reply, { success, errors });
  });
}

/** One new fax to `faxNumber`, its document shared between recipients when no cover page names them. */
async function createFor(
  ctx: EmulatorContext,
  spec: SendSpec,
  input: Input,
  faxNumber: string,
  contact: ContactRow | null,
  shared: SharedDoc,
): Promise<FaxRow> {
  // the cover page names the destination, so each recipient gets its own when there is one
  const doc =
    spec.coverPage || !shared.doc ? await buildDocument(ctx, spec, input, faxNumber, contact?.name) : shared.doc;
  if (!spec.coverPage) shared.doc = doc;
  return insertFax(
    ctx,
    {
      user: spec.user,
      direction: "outbound",
      channelType: "api",
      faxNumber,
      callerId: spec.callerId,
      csid: spec.user.faxCsid,
      subject: spec.subject,
      recipientName: spec.recipientName ?? contact?.name ?? null,
      senderName: spec.senderName,
      notes: spec.notes,
      coverPage: spec.coverPage,
      coverPageId: spec.coverPageRow?.uuid ?? null,
      cf: spec.cf,
      tags: spec.tags,
      contacts: contact ? [contact.uuid] : [],
      attachments: input.files.map((f) => f.filename),
      pagesCount: doc.pages,
      scheduledAt: spec.scheduledAt,
    },
    { bytes: doc.pdf },
  );
}

/** Send to many: each recipient's trouble (contact, number, document) is its own entry in `errors`. */
async function sendToMany(
  ctx: EmulatorContext,
  caller: Caller,
  input: Input,
): Promise<{ success: Record<string, unknown>[]; errors: RecipientError[] }> {
  const spec = readSendSpec(ctx, caller, input);
  const numbers = [...input.list("recipientFax"), ...input.list("faxNumber")];
  const contactIds = input.list("recipientContacts");
  if (numbers.length === 0 && contactIds.length === 0) throw invalid("recipientFax or recipientContacts is required");
  const render = renderer(ctx, "created");
  const success: Record<string, unknown>[] = [];
  const errors: RecipientError[] = [];
  const shared: SharedDoc = {};
  const targets = [
    ...numbers.map((n) => ({ raw: n, contact: null })),
    ...contactTargets(ctx, caller, contactIds, errors),
  ];
  for (const t of targets) {
    try {
      const faxNumber = parseDestination(t.raw);
      if (nothingToFax(spec, input)) throw invalid(NOTHING_TO_FAX);
      if (shared.error) throw shared.error;
      const row = await createFor(ctx, spec, input, faxNumber, t.contact, shared).catch((err: unknown) => {
        if (err instanceof ApiError && err.kind === "InvalidInputError") shared.error = err;
        throw err;
      });
      success.push(render(row));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      errors.push(recipientError(ctx, `${err.kind}: ${err.message}`, { faxNumber: t.raw }));
    }
  }
  return { success, errors };
}

/** The recipients named by contact id; a contact that cannot be used goes into `errors`. */
function contactTargets(
  ctx: EmulatorContext,
  caller: Caller,
  ids: string[],
  errors: RecipientError[],
): Array<{ raw: string; contact: ContactRow | null }> {
  const targets: Array<{ raw: string; contact: ContactRow | null }> = [];
  for (const id of ids) {
    const c = visibleContact(ctx, caller, id);
    if (!c) errors.push(recipientError(ctx, `NotFoundError: contact ${id} not found`, { contactId: id }));
    else if (!c.faxNumber)
      errors.push(recipientError(ctx, `InvalidInputError: contact "${c.name}" has no fax number`, { contactId: id }));
    else targets.push({ raw: c.faxNumber, contact: c });
  }
  return targets;
}

/** A copy of `old` (its owner's, its document) to `faxNumber`. */
function resendTo(ctx: EmulatorContext, caller: Caller, old: FaxRow, faxNumber: string): Promise<FaxRow> {
  const owner = userById(ctx, old.userId) ?? caller.user;
  return insertFax(
    ctx,
    {
      user: owner,
      direction: "outbound",
      channelType: "api",
      faxNumber,
      callerId: old.faxCallerId,
      csid: old.faxCsid,
      subject: old.subject,
      recipientName: old.recipientName,
      senderName: old.senderName,
      notes: old.notes,
      coverPage: old.coverPage === 1,
      coverPageId: old.coverPageId,
      cf: JSON.parse(old.cf) as Record<string, string>,
      tags: JSON.parse(old.tags) as string[],
      contacts: JSON.parse(old.contacts) as string[],
      attachments: JSON.parse(old.attachments) as string[],
      pagesCount: old.pagesCount,
      resentFrom: old.messageId,
    },
    { copyOf: old.pdfFile },
  );
}

/** One fax once made: archive, delete, download, info. */
function faxRecordRoutes(app: FastifyInstance, ctx: EmulatorContext, callerOf: CallerOf): void {
  const render = renderer(ctx);

  app.patch<{ Params: { id: string } }>("/v1/fax/:id", async (req) => {
    const caller = callerOf(req);
    requireAccess(caller, "admin", "base");
    const input = await readInput(req, ctx.uploadDir, false);
    const row = visibleFax(ctx, caller, req.params.id);
    if (!input.has("isArchived")) throw invalid("isArchived is required (the only editable property)");
    const archived = input.bool("isArchived", false);
    ctx.db.prepare("UPDATE faxes SET isArchived = ? WHERE messageId = ?").run(archived ? 1 : 0, row.messageId);
    return render(visibleFax(ctx, caller, row.messageId));
  });

  app.delete<{ Params: { id: string } }>("/v1/fax/:id", async (req) => {
    const caller = callerOf(req);
    requireAccess(caller, "admin", "base");
    const row = visibleFax(ctx, caller, req.params.id);
    // the fault switch: a service that refuses the delete, or answers 200 and keeps the fax
    const mode = ctx.faults.deleteMode();
    if (mode === "refuse") throw new ApiError("InternalError", `fax ${row.messageId} could not be deleted`);
    if (mode !== "ignore") await deleteFax(ctx, row);
    return { success: true, messageId: row.messageId };
  });

  app.get<{ Params: { id: string }; Querystring: { format?: string } }>("/v1/fax/:id/download", async (req, reply) => {
    const caller = callerOf(req);
    const row = visibleFax(ctx, caller, req.params.id);
    const format = req.query.format;
    if (format !== undefined && format !== "" && format.toLowerCase() !== "pdf")
      throw invalid(`format "${format.slice(0, 20)}" is not supported (pdf only)`);
    const file = path.join(ctx.faxDir, row.pdfFile);
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch {
      throw notFound(`the document of fax ${row.messageId} is gone`);
    }
    if (row.userId === caller.user.uuid && row.isRead === 0)
      ctx.db.prepare("UPDATE faxes SET isRead = 1 WHERE messageId = ?").run(row.messageId);
    reply
      .header("content-type", "application/pdf")
      .header("content-length", String(size))
      // the service's own form; its names are ASCII (fax-<number>.pdf)
      .header("content-disposition", `attachment; filename="fax-${row.messageNumber}.pdf"`);
    return reply.send(createReadStream(file));
  });

  app.get<{ Params: { id: string } }>("/v1/fax/:id/info", async (req) => {
    const caller = callerOf(req);
    const row = visibleFax(ctx, caller, req.params.id, { deleted: true });
    const owner = userById(ctx, row.userId);
    return renderFax(row, ctx.clock.now(), {
      cfMode: ctx.behaviour.cfMode,
      tags: tagsOf(ctx, row),
      contacts: contactsOf(ctx, row),
      users: ctx.behaviour.infoUsers === "viewers" ? viewersOf(ctx, row) : owner ? [owner] : [],
      account: account(ctx),
    });
  });
}

/** Everyone who can see a fax: the holders of the account's admin keys (in creation order), then its owner. */
function viewersOf(ctx: EmulatorContext, row: FaxRow): UserRow[] {
  const admins = ctx.db
    .prepare(
      `SELECT DISTINCT u.* FROM users u JOIN api_keys k ON k.userId = u.uuid
       WHERE k.accountId = ? AND k.access = 'admin' AND u.uuid != ? ORDER BY u.createdAt, u.uuid`,
    )
    .all(row.accountId, row.userId) as UserRow[];
  const owner = userById(ctx, row.userId);
  return owner ? [...admins, owner] : admins;
}

/** A contact the caller's user may use: its own or a public one of the account. */
export function visibleContact(ctx: EmulatorContext, caller: Caller, id: string): ContactRow | undefined {
  const c = ctx.db.prepare("SELECT * FROM contacts WHERE uuid = ? AND accountId = ?").get(id, caller.user.accountId) as
    | ContactRow
    | undefined;
  if (!c) return undefined;
  if (c.userId === caller.user.uuid || c.isPublic === 1 || caller.key.access === "admin") return c;
  return undefined;
}
