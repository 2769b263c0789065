// Request bodies as the service wants them: form-urlencoded for plain forms, multipart when files
// go along. Files are handed to undici as lazy blobs (fs.openAsBlob), so a 50 MB document is read
// from disk while it is uploaded, never held whole in memory.
import { openAsBlob } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { FormData } from "undici";
import { FaxgateError } from "../errors.js";
import type { AccessLevel, ApiVariant, CoverFields, FaxFile, HistoryQuery } from "./types.js";

export type FieldValue = string | number | boolean | undefined | null;
/** Ordered name/value pairs; undefined and null values are left out. */
export type Fields = Array<[string, FieldValue]>;

function present(fields: Fields): Array<[string, string]> {
  return fields
    .filter((f): f is [string, string | number | boolean] => f[1] !== undefined && f[1] !== null)
    .map(([k, v]) => [k, String(v)]);
}

export function urlEncoded(fields: Fields): string {
  return new URLSearchParams(present(fields)).toString();
}

/** `?a=1&b=2`, or '' when nothing is set. */
export function queryString(fields: Fields): string {
  const s = urlEncoded(fields);
  return s === "" ? "" : `?${s}`;
}

/** Variant A wants flags as a JSON object string, variant B the level's name. */
export function accessFields(access: AccessLevel | undefined, variant: ApiVariant): Fields {
  if (access === undefined) return [];
  if (variant === "b") return [["access", access]];
  return [
    [
      "accessLevel",
      JSON.stringify({ base: access === "base", admin: access === "admin", print_driver: access === "print_driver" }),
    ],
  ];
}

export function coverFields(f: CoverFields): Fields {
  return [
    ["coverPage", f.coverPage],
    ["coverPageId", f.coverPageId],
    ["recipientName", f.recipientName],
    ["senderName", f.senderName],
    ["subject", f.subject],
    ["callerId", f.callerId],
    ["notes", f.notes],
    ["recipientCompany", f.recipientCompany],
    ["recipientPhone", f.recipientPhone],
    ["senderCompany", f.senderCompany],
    ["senderPhone", f.senderPhone],
  ];
}

export function extraSendFields(f: { tags?: string[]; cf?: Record<string, string>; scheduledDate?: string }): Fields {
  return [
    ["tags", f.tags && f.tags.length > 0 ? f.tags.join(",") : undefined],
    ["cf", f.cf && Object.keys(f.cf).length > 0 ? JSON.stringify(f.cf) : undefined],
    ["scheduledDate", f.scheduledDate],
  ];
}

export function historyFields(q: HistoryQuery, variant: ApiVariant): Fields {
  const include = q.include && q.include.length > 0 ? q.include.join(",") : undefined;
  return [
    ["offset", q.offset],
    ["limit", q.limit],
    ["direction", q.direction],
    ["status", q.status],
    ["fromDate", q.fromDate],
    ["toDate", q.toDate],
    ["userId", q.userId],
    ["accountId", q.accountId],
    ["query", q.query],
    ["tags", q.tags && q.tags.length > 0 ? q.tags.join(",") : undefined],
    ["isArchived", q.isArchived],
    [variant === "b" ? "include" : "includes", include],
  ];
}

/** Each file must be a readable regular file before the upload starts (not half way through it). */
export async function checkFiles(files: FaxFile[]): Promise<void> {
  for (const [i, f] of files.entries()) {
    let st: Awaited<ReturnType<typeof stat>>;
    try {
      st = await stat(f.path);
    } catch (err) {
      throw new FaxgateError(
        "API_INVALID_INPUT",
        `attachment ${i + 1} (${path.basename(f.path)}) cannot be read: ${(err as NodeJS.ErrnoException).code ?? "error"}`,
        { field: "attachments", cause: err },
      );
    }
    if (!st.isFile())
      throw new FaxgateError(
        "API_INVALID_INPUT",
        `attachment ${i + 1} (${path.basename(f.path)}) is not a regular file`,
        { field: "attachments" },
      );
  }
}

/** A multipart form whose file parts are read from disk lazily while undici sends them. */
export async function multipart(fields: Fields, files: FaxFile[]): Promise<FormData> {
  const form = new FormData();
  for (const [k, v] of present(fields)) form.append(k, v);
  for (const f of files) {
    const blob = await openAsBlob(f.path, { type: f.contentType });
    form.append("attachments", blob, f.name ?? path.basename(f.path));
  }
  return form;
}
