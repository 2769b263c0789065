// One view of a request body whatever its encoding (multipart, form-urlencoded or JSON): named
// string values plus uploaded files. Uploads are streamed to files in the data folder, never held
// whole in memory; callers remove them with cleanup() once the fax document is built.
import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type { FastifyRequest } from "fastify";
import { ApiError, invalid } from "./api-error.js";

export interface UploadedFile {
  path: string;
  filename: string;
  mimetype: string;
  fieldname: string;
}

export class RequestInput {
  constructor(
    readonly fields: Map<string, string[]>,
    readonly files: UploadedFile[],
  ) {}

  has(name: string): boolean {
    return this.fields.has(name) || this.fields.has(`${name}[]`);
  }

  /** The first value of a field, or undefined when absent. */
  one(name: string): string | undefined {
    return this.fields.get(name)?.[0] ?? this.fields.get(`${name}[]`)?.[0];
  }

  /** Every value of a repeatable or comma-separated field, trimmed, empty ones dropped. */
  list(name: string): string[] {
    const raw = [...(this.fields.get(name) ?? []), ...(this.fields.get(`${name}[]`) ?? [])];
    const out: string[] = [];
    for (const v of raw) {
      const t = v.trim();
      // a JSON array string is a list too
      if (t.startsWith("[")) {
        try {
          const arr: unknown = JSON.parse(t);
          if (Array.isArray(arr)) {
            for (const x of arr) if (String(x).trim()) out.push(String(x).trim());
            continue;
          }
        } catch {
          // not JSON: treat as text
        }
      }
      for (const s of t.split(",")) if (s.trim()) out.push(s.trim());
    }
    return out;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.one(name);
    if (v === undefined || v === "") return fallback;
    return parseBool(v, name);
  }

  /** Fields whose names look like `prefix[key]`, as {key: value}. */
  bracketed(prefix: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of this.fields) {
      const m = k.startsWith(`${prefix}[`) && k.endsWith("]") ? k.slice(prefix.length + 1, -1) : null;
      if (m) out[m] = v[0] ?? "";
    }
    return out;
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.files.map((f) => rm(f.path, { force: true })));
  }
}

export function parseBool(v: string, name: string): boolean {
  const s = v.trim().toLowerCase();
  if (s === "true" || s === "1" || s === "on" || s === "yes") return true;
  if (s === "false" || s === "0" || s === "off" || s === "no" || s === "") return false;
  throw invalid(`${name} must be true or false`);
}

function addValue(fields: Map<string, string[]>, name: string, value: unknown): void {
  if (value === undefined || value === null) return;
  const list = fields.get(name) ?? [];
  if (Array.isArray(value)) {
    for (const v of value) list.push(typeof v === "object" && v !== null ? JSON.stringify(v) : String(v));
  } else if (typeof value === "object") {
    list.push(JSON.stringify(value));
  } else {
    list.push(String(value));
  }
  fields.set(name, list);
}

export async function readInput(req: FastifyRequest, uploadDir: string, allowFiles: boolean): Promise<RequestInput> {
  const fields = new Map<string, string[]>();
  const files: UploadedFile[] = [];
  const input = new RequestInput(fields, files);
  if (req.isMultipart()) {
    try {
      for await (const part of req.parts()) {
        if (part.type === "file") {
          const dest = path.join(uploadDir, `${randomUUID()}.upload`);
          files.push({
            path: dest,
            filename: part.filename || "attachment",
            mimetype: part.mimetype || "application/octet-stream",
            fieldname: part.fieldname,
          });
          await pipeline(part.file, createWriteStream(dest, { mode: 0o600 }));
          if (part.file.truncated)
            throw new ApiError("PayloadTooLargeError", `file ${part.filename} is over the size limit`);
          if (!allowFiles) throw invalid(`this call takes no files (got ${part.fieldname})`);
        } else {
          addValue(fields, part.fieldname, part.value);
        }
      }
    } catch (err) {
      await input.cleanup();
      throw mapMultipartError(err);
    }
  } else if (req.body && typeof req.body === "object") {
    for (const [k, v] of Object.entries(req.body as Record<string, unknown>)) addValue(fields, k, v);
  }
  return input;
}

/** Query-string parameters in the same shape as body fields. */
export function queryInput(req: FastifyRequest): RequestInput {
  const fields = new Map<string, string[]>();
  for (const [k, v] of Object.entries((req.query ?? {}) as Record<string, unknown>)) addValue(fields, k, v);
  return new RequestInput(fields, []);
}

function mapMultipartError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  const code = (err as { code?: string }).code ?? "";
  if (/LIMIT|TOO_LARGE|FILE_SIZE/.test(code) || (err as { statusCode?: number }).statusCode === 413) {
    return new ApiError("PayloadTooLargeError", "the request body is over the size limit");
  }
  if ((err as { statusCode?: number }).statusCode === 400 || /MULTIPART|BOUNDARY/.test(code))
    return invalid("the multipart body cannot be read");
  return err;
}

/** Refuses a field longer than its documented bound (the bound itself is allowed). */
export function checkMax(input: RequestInput, name: string, max: number): string | undefined {
  const v = input.one(name);
  if (v !== undefined && [...v].length > max)
    throw invalid(`${name} must be at most ${max} characters (got ${[...v].length})`);
  return v;
}
