// Raw HTTPS calls to a test emulator (deliberately not the project's client: these tests pin the
// service's wire behaviour, which the client is built against).
import { Agent, FormData, request } from "undici";
import { PDFDocument } from "@cantoo/pdf-lib";
import type { RunningEmulator } from "../../src/emulator/emulator.js";
import type { WireJson } from "../helpers/wire-json.js";

export interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  bytes: Buffer;
  json: WireJson;
}

export interface Api {
  call(
    method: string,
    path: string,
    key: string | null,
    body?: FormData | URLSearchParams | Record<string, unknown>,
  ): Promise<Res>;
  get(path: string, key: string | null): Promise<Res>;
  close(): Promise<void>;
}

export function apiFor(emu: Pick<RunningEmulator, "baseUrl" | "caPem">): Api {
  const agent = new Agent({ connect: { ca: emu.caPem } });
  const call: Api["call"] = async (method, path, key, body) => {
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Basic ${key}`;
    let payload: FormData | string | undefined;
    if (body instanceof FormData) payload = body;
    else if (body instanceof URLSearchParams) {
      payload = body.toString();
      headers["content-type"] = "application/x-www-form-urlencoded";
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers["content-type"] = "application/json";
    }
    const r = await request(`${emu.baseUrl}${path}`, {
      method: method as "GET",
      headers,
      body: payload,
      dispatcher: agent,
    });
    const bytes = Buffer.from(await r.body.arrayBuffer());
    const text = bytes.toString("utf8");
    let json: unknown = null;
    if ((r.headers["content-type"] ?? "").toString().includes("json") && text) json = JSON.parse(text);
    return { status: r.statusCode, headers: r.headers as Res["headers"], text, bytes, json };
  };
  return { call, get: (p, k) => call("GET", p, k), close: () => agent.close() };
}

/** A multipart body: string fields, and files as [name, bytes, type?]. */
export function form(
  fields: Record<string, string | string[]>,
  files: Array<[string, Uint8Array | string, string?]> = [],
): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) fd.append(k, x);
  for (const [name, data, type] of files)
    fd.append(
      "attachments",
      new Blob([typeof data === "string" ? data : new Uint8Array(data)], { type: type ?? "application/octet-stream" }),
      name,
    );
  return fd;
}

export async function pdfWithPages(n: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < n; i++) doc.addPage([612, 792]).drawText(`page ${i + 1}`, { x: 50, y: 700 });
  return doc.save();
}

export async function pageCount(pdf: Uint8Array): Promise<number> {
  return (await PDFDocument.load(pdf)).getPageCount();
}

/** A clock tests move by hand, so lifecycle rules are checked without waiting. */
export function manualClock(start = Date.parse("2026-03-02T15:00:00.000Z")): {
  now(): number;
  advance(ms: number): void;
  set(ms: number): void;
} {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms), set: (ms) => (t = ms) };
}
