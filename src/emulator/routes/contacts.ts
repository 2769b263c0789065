// Contacts and organizations: list (paged, ordered, searched), create, update, delete, bulk delete.
// A user sees its own contacts and the account's public ones.
import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalid, notAllowed, notFound } from "../api-error.js";
import { isAdmin, requireAccess, targetUser } from "../auth.js";
import type { Caller, EmulatorContext } from "../context.js";
import type { ContactRow, UserRow } from "../db.js";
import { formatContactNumber } from "../fax-number.js";
import { queryInput, readInput, type RequestInput } from "../request-input.js";
import { renderContact } from "../shapes.js";

const ORDER_COLUMNS = new Set(["name", "email", "faxNumber", "phoneNumber", "createdAt", "updatedAt"]);

function orderBy(raw: string | undefined): string {
  const v = (raw ?? "name asc").trim();
  const m = /^(\w+)(?:\s+(asc|desc))?$/i.exec(v);
  if (!m || !ORDER_COLUMNS.has(m[1])) throw invalid(`order must be "<${[...ORDER_COLUMNS].join("|")}> asc|desc"`);
  const dir = (m[2] ?? "asc").toUpperCase();
  return `${m[1]} COLLATE NOCASE ${dir}, uuid ${dir}`;
}

function intParam(input: RequestInput, name: string, fallback: number, max: number): number {
  const v = input.one(name);
  if (v === undefined || v === "") return fallback;
  if (!/^\d+$/.test(v.trim()) || Number(v) > max) throw invalid(`${name} must be a whole number up to ${max}`);
  return Number(v);
}

export function contactRoutes(
  app: FastifyInstance,
  ctx: EmulatorContext,
  callerOf: (req: FastifyRequest) => Caller,
): void {
  app.get("/v1/contacts", async (req) => {
    const caller = callerOf(req);
    const q = queryInput(req);
    return listContacts(ctx, targetUser(ctx, caller, q.one("userId")), q);
  });

  app.post("/v1/contacts", async (req) => {
    const caller = callerOf(req);
    requireAccess(caller, "admin", "base");
    const input = await readInput(req, ctx.uploadDir, false);
    const user = targetUser(ctx, caller, queryInput(req).one("userId") ?? input.one("userId"));
    const f = readFields(input);
    if (!f.name) throw invalid("name is required");
    checkOrganization(ctx, caller, f.organizationId);
    const row = insertContact(ctx, user, f, input.bool("isOrganization", false));
    return renderContact(row);
  });

  app.patch<{ Params: { id: string } }>("/v1/contacts/:id", async (req) => {
    const caller = callerOf(req);
    requireAccess(caller, "admin", "base");
    const input = await readInput(req, ctx.uploadDir, false);
    const c = editable(ctx, caller, req.params.id);
    const f = readFields(input);
    if ("name" in f && !f.name) throw invalid("name must not be empty");
    if (f.organizationId === c.uuid) throw invalid("a contact cannot be its own organization");
    checkOrganization(ctx, caller, f.organizationId);
    const next = { ...c, ...f, updatedAt: ctx.clock.now() } as ContactRow;
    ctx.db
      .prepare(`UPDATE contacts SET name = @name, email = @email, faxNumber = @faxNumber, phoneNumber = @phoneNumber, organizationId = @organizationId,
      isPublic = @isPublic, publicEditable = @publicEditable, updatedAt = @updatedAt WHERE uuid = @uuid`)
      .run(next);
    return renderContact(next);
  });

  app.delete("/v1/contacts/bulk", async (req, reply) => {
    const caller = callerOf(req);
    requireAccess(caller, "admin", "base");
    const q = queryInput(req);
    const body = await readInput(req, ctx.uploadDir, false);
    const ids = [
      ...q.list("contactIds"),
      ...q.list("contactsIds"),
      ...body.list("contactIds"),
      ...body.list("contactsIds"),
    ];
    if (ids.length === 0) throw invalid("contactIds is required (comma-separated contact ids)");
    for (const id of ids) editable(ctx, caller, id);
    removeContacts(ctx, ids);
    return reply.code(204).send();
  });

  app.delete<{ Params: { id: string } }>("/v1/contacts/:id", async (req, reply) => {
    const caller = callerOf(req);
    requireAccess(caller, "admin", "base");
    const c = editable(ctx, caller, req.params.id);
    removeContacts(ctx, [c.uuid]);
    return reply.code(204).send();
  });
}

/** One page of the contacts `user` sees (its own and the public ones), searched and ordered as asked. */
function listContacts(ctx: EmulatorContext, user: UserRow, q: RequestInput) {
  const limit = intParam(q, "limit", 50, 1000);
  const offset = intParam(q, "offset", 0, Number.MAX_SAFE_INTEGER);
  const where = ["accountId = @accountId", "(userId = @userId OR isPublic = 1)"];
  const params: Record<string, unknown> = { accountId: user.accountId, userId: user.uuid };
  const text = q.one("query")?.trim();
  if (text) {
    where.push(
      `(name LIKE @q ESCAPE '\\' OR faxNumber LIKE @q ESCAPE '\\' OR phoneNumber LIKE @q ESCAPE '\\' OR email LIKE @q ESCAPE '\\')`,
    );
    params.q = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  }
  const sqlWhere = where.join(" AND ");
  const count = (ctx.db.prepare(`SELECT COUNT(*) AS n FROM contacts WHERE ${sqlWhere}`).get(params) as { n: number }).n;
  const rows = ctx.db
    .prepare(`SELECT * FROM contacts WHERE ${sqlWhere} ORDER BY ${orderBy(q.one("order"))} LIMIT @limit OFFSET @offset`)
    .all({ ...params, limit, offset }) as ContactRow[];
  const members = ctx.db.prepare(
    "SELECT * FROM contacts WHERE organizationId = ? AND (userId = ? OR isPublic = 1) ORDER BY name COLLATE NOCASE",
  );
  return {
    count,
    rows: rows.map((r) =>
      renderContact(r, r.isOrganization === 1 ? (members.all(r.uuid, user.uuid) as ContactRow[]) : undefined),
    ),
    limit,
    offset,
  };
}

function contactById(ctx: EmulatorContext, id: string): ContactRow | undefined {
  return ctx.db.prepare("SELECT * FROM contacts WHERE uuid = ?").get(id) as ContactRow | undefined;
}

/** A contact the caller may change: its own, the account's for admins, public-editable ones. */
function editable(ctx: EmulatorContext, caller: Caller, id: string): ContactRow {
  const c = contactById(ctx, id);
  if (!c || c.accountId !== caller.user.accountId) throw notFound(`contact ${id} not found`);
  if (c.userId === caller.user.uuid || isAdmin(caller)) return c;
  if (c.isPublic === 1 && c.publicEditable === 1) return c;
  if (c.isPublic === 1) throw notAllowed(`contact ${id} is not editable by other users`);
  throw notFound(`contact ${id} not found`);
}

/** The contact fields a create or update sent, checked and trimmed (empty text: null). */
function readFields(input: RequestInput): Partial<Record<string, unknown>> {
  const f: Partial<Record<string, unknown>> = {};
  for (const k of ["name", "email"]) {
    const v = input.one(k);
    if (v !== undefined) {
      if (v.length > 255) throw invalid(`${k} must be at most 255 characters`);
      f[k] = v.trim() === "" ? null : v.trim();
    }
  }
  if (input.has("email") && f.email && !/^[^\s@]+@[^\s@]+$/.test(String(f.email)))
    throw invalid("email is not an e-mail address");
  const fax = formatContactNumber(input.one("faxNumber"), "faxNumber");
  if (fax !== undefined) f.faxNumber = fax;
  const phone = formatContactNumber(input.one("phoneNumber"), "phoneNumber");
  if (phone !== undefined) f.phoneNumber = phone;
  for (const k of ["isPublic", "publicEditable"]) if (input.has(k)) f[k] = input.bool(k, false) ? 1 : 0;
  if (input.has("organizationId")) f.organizationId = input.one("organizationId")?.trim() || null;
  return f;
}

/** An organization a contact may belong to: one the caller sees, and an organization. */
function checkOrganization(ctx: EmulatorContext, caller: Caller, orgId: unknown): void {
  if (orgId === null || orgId === undefined) return;
  const org = contactById(ctx, String(orgId));
  if (
    !org ||
    org.accountId !== caller.user.accountId ||
    (org.userId !== caller.user.uuid && org.isPublic !== 1 && !isAdmin(caller))
  )
    throw notFound(`organization ${String(orgId)} not found`);
  if (org.isOrganization !== 1) throw invalid(`contact ${String(orgId)} is not an organization`);
}

/** Deletes contacts; an organization's members stay, without it. */
function removeContacts(ctx: EmulatorContext, ids: string[]): void {
  ctx.db.transaction(() => {
    for (const id of ids) {
      ctx.db.prepare("DELETE FROM contacts WHERE uuid = ?").run(id);
      ctx.db.prepare("UPDATE contacts SET organizationId = NULL WHERE organizationId = ?").run(id);
    }
  })();
}

/** A new contact (or organization) of `user` with the fields read. */
function insertContact(
  ctx: EmulatorContext,
  user: UserRow,
  f: Partial<Record<string, unknown>>,
  isOrganization: boolean,
): ContactRow {
  const now = ctx.clock.now();
  const row: ContactRow = {
    uuid: randomUUID(),
    userId: user.uuid,
    accountId: user.accountId,
    name: String(f.name),
    email: (f.email as string | null) ?? null,
    faxNumber: (f.faxNumber as string | null) ?? null,
    phoneNumber: (f.phoneNumber as string | null) ?? null,
    isOrganization: isOrganization ? 1 : 0,
    organizationId: (f.organizationId as string | null) ?? null,
    isPublic: (f.isPublic as number) ?? 0,
    publicEditable: (f.publicEditable as number) ?? 0,
    createdAt: now,
    updatedAt: now,
  };
  ctx.db
    .prepare(`INSERT INTO contacts (uuid, userId, accountId, name, email, faxNumber, phoneNumber, isOrganization, organizationId, isPublic, publicEditable, createdAt, updatedAt)
    VALUES (@uuid, @userId, @accountId, @name, @email, @faxNumber, @phoneNumber, @isOrganization, @organizationId, @isPublic, @publicEditable, @createdAt, @updatedAt)`)
    .run(row);
  return row;
}
