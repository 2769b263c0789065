// Answers of both documented API variants, turned into the one set of types in ./types.ts.
// Lenient where the variants differ (numbers as strings, two paging layouts, two per-recipient
// error shapes), strict where a caller would otherwise get nonsense (a fax without a messageId).
import { FaxgateError } from "../errors.js";
import {
  ACCESS_LEVELS,
  type AccessLevel,
  type ApiKey,
  type Contact,
  type FaxRecord,
  type Page,
  type RecipientError,
  type SendManyResult,
} from "./types.js";

type Obj = Record<string, unknown>;

export function badResponse(what: string): FaxgateError {
  return new FaxgateError("API_BAD_RESPONSE", `the fax service answered ${what}`, { temporary: true });
}

export function asObject(v: unknown, what: string): Obj {
  if (!v || typeof v !== "object" || Array.isArray(v))
    throw badResponse(`${what} with something that is not an object`);
  return v as Obj;
}

function asArray(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw badResponse(`${what} without a list`);
  return v;
}

function toNumber(v: unknown, fallback: number): number {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return fallback;
}

function isAccessLevel(v: unknown): v is AccessLevel {
  return typeof v === "string" && (ACCESS_LEVELS as readonly string[]).includes(v);
}

/** Variant A's accessLevel: an array of names, or (seen in requests) an object of flags, maybe as JSON text. */
function levelsOf(v: unknown): AccessLevel[] {
  if (typeof v === "string") {
    const t = v.trim();
    if (t.startsWith("{") || t.startsWith("[")) {
      try {
        return levelsOf(JSON.parse(t));
      } catch {
        return [];
      }
    }
    return isAccessLevel(t) ? [t] : [];
  }
  if (Array.isArray(v)) return v.filter(isAccessLevel);
  if (v && typeof v === "object")
    return ACCESS_LEVELS.filter((l) => (v as Obj)[l] === true || (v as Obj)[l] === "true");
  return [];
}

export function toApiKey(raw: unknown): ApiKey {
  const o = asObject(raw, "an API key");
  const levels = levelsOf(o.accessLevel);
  const access = isAccessLevel(o.access) ? o.access : levels[0];
  if (!access) throw badResponse("an API key without a known access level");
  if (typeof o.uuid !== "string") throw badResponse("an API key without a uuid");
  const key: ApiKey = {
    ...(o as unknown as ApiKey),
    access,
    accessLevel: levels.length > 0 ? levels : [access],
    expiresAt: typeof o.expiresAt === "string" && o.expiresAt !== "" ? o.expiresAt : null,
  };
  return key;
}

export function toApiKeys(raw: unknown): ApiKey[] {
  // A list may come bare or wrapped like the paged lists.
  const rows = Array.isArray(raw) ? raw : asArray(asObject(raw, "the key list").rows, "the key list");
  return rows.map(toApiKey);
}

export function toContact(raw: unknown): Contact {
  const o = asObject(raw, "a contact");
  if (typeof o.uuid !== "string") throw badResponse("a contact without a uuid");
  const c = { ...(o as unknown as Contact) };
  if (Array.isArray(o.contacts)) c.contacts = o.contacts.map(toContact);
  return c;
}

export function toFaxRecord(raw: unknown): FaxRecord {
  const o = asObject(raw, "a fax record");
  if (typeof o.messageId !== "string" || o.messageId === "") throw badResponse("a fax record without a messageId");
  const rec = { ...(o as unknown as FaxRecord) };
  if (typeof o.status !== "string") rec.status = String(o.status ?? "processing");
  // Custom fields may come as sent, as JSON text (one variant), as {} or not at all (an account
  // that does not store undefined fields); anything else is dropped rather than trusted.
  let cf: unknown = o.cf;
  if (typeof cf === "string") {
    try {
      cf = JSON.parse(cf) as unknown;
    } catch {
      cf = undefined;
    }
  }
  if (cf && typeof cf === "object" && !Array.isArray(cf)) rec.cf = cf as Record<string, string>;
  else delete rec.cf;
  return rec;
}

/**
 * Both paging layouts: `{count, rows, limit, offset}` and `{count: "12", rows, query: {limit, offset}}`.
 * `asked` fills in what an answer leaves out.
 */
export function toPage<T>(
  raw: unknown,
  mapRow: (r: unknown) => T,
  asked: { limit?: number; offset?: number },
): Page<T> {
  const o = Array.isArray(raw) ? { rows: raw } : asObject(raw, "a page");
  const rows = asArray(o.rows, "a page").map(mapRow);
  const q = o.query && typeof o.query === "object" ? (o.query as Obj) : {};
  const offset = toNumber(o.offset ?? q.offset, asked.offset ?? 0);
  return {
    count: toNumber(o.count, offset + rows.length),
    rows,
    limit: toNumber(o.limit ?? q.limit, asked.limit ?? rows.length),
    offset,
  };
}

/** "InvalidInputError: no files" -> name InvalidInputError, message "no files". */
export function splitErrorText(text: string): { name: string; message: string } {
  const m = /^\s*([A-Za-z][A-Za-z0-9_]*(?:Error|Exception))\s*:\s*([\s\S]*)$/.exec(text);
  if (m) return { name: m[1]!, message: m[2]!.trim() };
  return { name: "Error", message: text.trim() };
}

/** `{error, recipientFax}` or `{input: {faxNumber}, error}`; `error` may also be `{name, message}`. */
export function toRecipientError(raw: unknown): RecipientError {
  const o = asObject(raw, "a recipient error");
  const input = o.input && typeof o.input === "object" ? (o.input as Obj) : {};
  const fax = o.recipientFax ?? input.faxNumber ?? input.recipientFax ?? null;
  let error: string;
  let parsed: { name: string; message: string };
  if (o.error && typeof o.error === "object") {
    const e = o.error as Obj;
    parsed = {
      name: typeof e.name === "string" ? e.name : "Error",
      message: typeof e.message === "string" ? e.message : "",
    };
    error = `${parsed.name}: ${parsed.message}`;
  } else {
    error = typeof o.error === "string" ? o.error : String(o.error ?? o.message ?? "unknown error");
    parsed = splitErrorText(error);
  }
  return {
    recipientFax: typeof fax === "string" ? fax : fax === null ? null : String(fax),
    name: parsed.name,
    message: parsed.message,
    error,
  };
}

export function toSendManyResult(raw: unknown): SendManyResult {
  const o = asObject(raw, "a send result");
  // A single fax record instead of the envelope: take it as the one success.
  if (typeof o.messageId === "string" && o.success === undefined) return { success: [toFaxRecord(o)], errors: [] };
  const success = o.success === undefined ? [] : asArray(o.success, "a send result").map(toFaxRecord);
  const errors = o.errors === undefined ? [] : asArray(o.errors, "a send result").map(toRecipientError);
  return { success, errors };
}

/** The whole-request error body `{"error": {"name", "message"}}` (or looser shapes), if any. */
export function serviceErrorOf(body: string): { name?: string; message?: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return {};
  }
  if (!parsed || typeof parsed !== "object") return {};
  const o = parsed as Obj;
  if (o.error && typeof o.error === "object") {
    const e = o.error as Obj;
    return {
      name: typeof e.name === "string" ? e.name : undefined,
      message: typeof e.message === "string" ? e.message : undefined,
    };
  }
  if (typeof o.error === "string") {
    const s = splitErrorText(o.error);
    return { name: s.name === "Error" ? undefined : s.name, message: s.message };
  }
  if (typeof o.message === "string")
    return { name: typeof o.name === "string" ? o.name : undefined, message: o.message };
  return {};
}
