// Sending from the console: a new fax (POST /api/faxes, multipart) through the same checks and
// accept step as mail, print and `faxgate send`, and the user's contacts the send page offers.
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { FaxgateError } from "../errors.js";
import { faxNumber, size } from "../format.js";
import { newFaxDocuments } from "../intake/index.js";
import { refuseControlCharacters } from "../store/index.js";
import type { ConsoleContext } from "./context.js";
import { publicJob } from "./jobs.js";
import { sessionOf } from "./sessions.js";

/** Uploads at once in one new fax. */
export const MAX_FILES = 20;

export const sendRoutes: FastifyPluginAsync<{ ctx: ConsoleContext }> = async (api, { ctx }) => {
  api.post("/api/faxes", async (req) => newFax(ctx, req));

  api.get("/api/contacts", async (req) => {
    const s = sessionOf(req);
    const q = req.query as Record<string, string | undefined>;
    const page = await ctx.deps
      .clientFor(s.user)
      .listContacts({ limit: 100, query: q.search?.slice(0, 100) || undefined });
    const flat = page.rows.flatMap((c) => [c, ...(c.contacts ?? [])]);
    return flat.map((c) => ({
      id: c.uuid,
      name: c.name,
      faxNumber: faxNumber(c.faxNumber, ctx.deps.defaultCountryCode()) ?? c.faxNumber,
      email: c.email,
      organization: c.isOrganization,
      public: c.isPublic,
    }));
  });

  api.post("/api/contacts", async (req, reply) => {
    const s = sessionOf(req);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const name = typeof body.name === "string" ? body.name.trim().slice(0, 200) : "";
    const number = typeof body.faxNumber === "string" ? body.faxNumber.trim().slice(0, 40) : "";
    if (!name || !number) return reply.code(400).send({ error: "a contact needs a name and a fax number" });
    const c = await ctx.deps.clientFor(s.user).createContact({
      name,
      faxNumber: number,
      email: typeof body.email === "string" && body.email ? body.email : undefined,
    });
    ctx.log.info({ user: s.user, contact: c.uuid }, "WEB created a contact");
    return { id: c.uuid, name: c.name, faxNumber: c.faxNumber, email: c.email };
  });
};

async function newFax(ctx: ConsoleContext, req: FastifyRequest) {
  const s = sessionOf(req);
  if (!req.isMultipart())
    throw new FaxgateError("USAGE", "send the fax as multipart/form-data (fields to, subject, notes, cover, files)");
  const dir = await mkdtemp(path.join(await ctx.scratch(), "up-"));
  try {
    const { fields, uploads } = await readParts(ctx, req, dir);
    const subject = fields.subject?.[0]?.trim() || undefined;
    const notes = fields.notes?.[0]?.trim() || undefined;
    refuseControlCharacters("subject", subject);
    refuseControlCharacters("notes", notes);
    for (const u of uploads) refuseControlCharacters("file name", u.name);
    const coverAsked = ["on", "true", "1", "yes"].includes((fields.cover?.[0] ?? "").toLowerCase());
    // a cover page with only a subject on it is not what anyone means to fax
    if (uploads.length === 0 && !notes)
      throw new FaxgateError("NOTHING_TO_FAX", "choose a file to fax (or write notes for a cover page)");
    // numbers and the user's rate first: a fax refused for either costs no conversion
    const recipients = await ctx.recipientsOf(s, fields.to ?? []);
    const { documents, leftOut } = await newFaxDocuments(
      uploads,
      () => ctx.deps.office,
      undefined,
      s.user,
      ctx.deps.partial?.() ?? "refuse",
    );
    const job = await ctx.submit(s, {
      recipients,
      documents,
      cover: { enabled: coverAsked || documents.length === 0, subject, notes },
      origin: { via: "web console", ...(subject ? { subject } : {}) },
      leftOut,
    });
    return publicJob(job, ctx.clock.now());
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The form's fields, and its `files` written to `dir` (other file fields are skipped). */
async function readParts(ctx: ConsoleContext, req: FastifyRequest, dir: string) {
  const fields: Record<string, string[]> = {};
  const uploads: Array<{ path: string; name: string }> = [];
  for await (const part of req.parts()) {
    if (part.type !== "file") {
      (fields[part.fieldname] ??= []).push(String(part.value));
      continue;
    }
    if (part.fieldname !== "files") {
      part.file.resume();
      continue;
    }
    const file = path.join(dir, String(uploads.length));
    await pipeline(part.file, createWriteStream(file, { mode: 0o600 }));
    if (part.file.truncated) {
      const most = size(ctx.deps.maxUploadBytes);
      throw new FaxgateError("USAGE", `${part.filename}: larger than the console takes (${most})`);
    }
    if ((await stat(file)).size === 0) continue; // an empty file input
    uploads.push({ path: file, name: path.basename(part.filename || `document-${uploads.length + 1}`) });
  }
  return { fields, uploads };
}
