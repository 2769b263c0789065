// The common part of "send a fax" and "send to many": fields checked against their documented
// limits, tags, custom fields, schedule and cover page, then the document built from them.
import { ApiError, invalid, notFound } from "./api-error.js";
import type { Caller, EmulatorContext } from "./context.js";
import { account } from "./context.js";
import type { CoverPageRow, UserRow } from "./db.js";
import { buildFaxDocument, type CoverInfo } from "./document.js";
import { checkMax, type RequestInput } from "./request-input.js";

export const LIMITS = {
  recipientName: 40,
  senderName: 40,
  subject: 55,
  callerId: 10,
  notes: 4000,
  keyName: 128,
  historyLimit: 500,
} as const;

export interface SendSpec {
  user: UserRow;
  coverPage: boolean;
  coverPageRow: CoverPageRow | null;
  recipientName?: string;
  senderName: string;
  subject?: string;
  callerId: string;
  notes?: string;
  recipientCompany?: string;
  recipientPhone?: string;
  senderCompany?: string;
  senderPhone?: string;
  tags: string[];
  cf: Record<string, string>;
  scheduledAt: number | null;
}

export function readSendSpec(ctx: EmulatorContext, caller: Caller, input: RequestInput): SendSpec {
  const recipientName = checkMax(input, "recipientName", LIMITS.recipientName);
  const senderName = checkMax(input, "senderName", LIMITS.senderName);
  const subject = checkMax(input, "subject", LIMITS.subject);
  const callerId = checkMax(input, "callerId", LIMITS.callerId);
  const notes = checkMax(input, "notes", LIMITS.notes);
  // undocumented fields some clients send: bounded generously, not by an invented service limit
  for (const f of ["recipientCompany", "recipientPhone", "senderCompany", "senderPhone"]) checkMax(input, f, 255);
  if (callerId && !/^[\d+\s().-]*$/.test(callerId)) throw invalid("callerId must be a phone number");

  const coverPage = input.bool("coverPage", false);
  const coverPageId = input.one("coverPageId")?.trim();
  let coverPageRow: CoverPageRow | null = null;
  if (coverPage) {
    coverPageRow = coverPageId
      ? ((ctx.db
          .prepare("SELECT * FROM cover_pages WHERE uuid = ? AND accountId = ?")
          .get(coverPageId, ctx.accountId) as CoverPageRow | undefined) ?? null)
      : (ctx.db
          .prepare("SELECT * FROM cover_pages WHERE accountId = ? ORDER BY isDefault DESC, createdAt LIMIT 1")
          .get(ctx.accountId) as CoverPageRow);
    if (!coverPageRow) throw notFound(`cover page ${coverPageId} not found`);
  }

  const tags = input.list("tags");
  for (const t of tags) {
    if (!ctx.db.prepare("SELECT 1 FROM tags WHERE uuid = ? AND accountId = ?").get(t, ctx.accountId))
      throw invalid(`unknown tag id "${t.slice(0, 60)}"`);
  }

  const cf: Record<string, string> = {};
  const cfRaw = input.one("cf");
  if (cfRaw !== undefined && cfRaw.trim() !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(cfRaw);
    } catch {
      throw invalid("cf must be a JSON object of custom fields");
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
      throw invalid("cf must be a JSON object of custom fields");
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>))
      cf[k] = typeof v === "string" ? v : JSON.stringify(v);
  }
  Object.assign(cf, input.bracketed("cf"));

  let scheduledAt: number | null = null;
  const sched = input.one("scheduledDate")?.trim();
  if (sched) {
    scheduledAt = Date.parse(sched);
    if (Number.isNaN(scheduledAt)) throw invalid("scheduledDate must be an ISO 8601 date-time");
  }

  const user = caller.user;
  return {
    user,
    coverPage,
    coverPageRow,
    recipientName: recipientName || undefined,
    senderName: senderName || [user.firstName, user.lastName].filter(Boolean).join(" ") || user.email,
    subject: subject || undefined,
    callerId: callerId || user.faxCallerId,
    notes: notes || undefined,
    recipientCompany: input.one("recipientCompany") || undefined,
    recipientPhone: input.one("recipientPhone") || undefined,
    senderCompany: input.one("senderCompany") || undefined,
    senderPhone: input.one("senderPhone") || undefined,
    tags,
    cf,
    scheduledAt,
  };
}

export function nothingToFax(spec: SendSpec, input: RequestInput): boolean {
  return !spec.coverPage && input.files.length === 0;
}

export const NOTHING_TO_FAX = "attachments are required when coverPage is not set";

export async function buildDocument(
  ctx: EmulatorContext,
  spec: SendSpec,
  input: RequestInput,
  toNumber: string,
  toName: string | undefined,
): Promise<{ pdf: Uint8Array; pages: number }> {
  let cover: CoverInfo | null = null;
  if (spec.coverPage) {
    const acct = account(ctx);
    const when = spec.scheduledAt && spec.scheduledAt > ctx.clock.now() ? spec.scheduledAt : ctx.clock.now();
    cover = {
      coverPageName: spec.coverPageRow?.name ?? "Standard",
      to: toName ?? spec.recipientName ?? "",
      toNumber,
      from: spec.senderName,
      callerId: spec.callerId,
      subject: spec.subject ?? "",
      notes: spec.notes ?? "",
      date: formatDate(when, acct.timezone),
      recipientCompany: spec.recipientCompany,
      recipientPhone: spec.recipientPhone,
      senderCompany: spec.senderCompany,
      senderPhone: spec.senderPhone,
    };
  }
  try {
    return await buildFaxDocument(
      cover,
      input.files.map((f) => ({ path: f.path, filename: f.filename, mimetype: f.mimetype })),
    );
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError("InternalError", `the fax document could not be built: ${(err as Error).message.slice(0, 120)}`);
  }
}

function formatDate(ms: number, timezone: string): string {
  try {
    return new Intl.DateTimeFormat("en-US", { dateStyle: "full", timeStyle: "short", timeZone: timezone }).format(
      new Date(ms),
    );
  } catch {
    return new Date(ms).toISOString();
  }
}
