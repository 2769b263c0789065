// SCIM PATCH (RFC 7644 §3.5.2) on a resource's JSON, as provisioning clients send it: op names in
// any case ("Replace", Entra ID), attribute names in any case (RFC 7643 §2.1), a path or none
// (the value is then an object of attributes), value filters on multi-valued attributes
// (`emails[type eq "work"].value`, `members[value eq "…"]`), and booleans sent as "True"/"False".
import { FaxgateError } from "../errors.js";

export interface PatchOp {
  op: string;
  path?: string;
  value?: unknown;
}

type Json = Record<string, unknown>;

const bad = (detail: string) => new FaxgateError("USAGE", detail, { httpStatus: 400, field: "invalidPath" });

/** The key of `obj` that names `attr` without regard to case (or `attr` itself when none does). */
function keyOf(obj: Json, attr: string): string {
  return Object.keys(obj).find((k) => k.toLowerCase() === attr.toLowerCase()) ?? attr;
}

/** "True"/"False" (Entra ID sends them as strings) where a boolean is meant. */
export function booleanish(v: unknown): unknown {
  if (typeof v === "string" && /^(true|false)$/i.test(v)) return v.toLowerCase() === "true";
  return v;
}

interface Path {
  attr: string;
  filter?: { attr: string; value: string };
  sub?: string;
}

function parsePath(path: string): Path {
  // urn-prefixed paths name the core schema's attributes: keep what follows the last ':'
  const p = path.includes(":") ? path.slice(path.lastIndexOf(":") + 1) : path;
  const m =
    /^([A-Za-z][\w$-]*)(?:\[\s*([A-Za-z][\w$-]*)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*\])?(?:\.([A-Za-z][\w$-]*))?$/i.exec(
      p.trim(),
    );
  if (!m) throw bad(`unsupported PATCH path "${path}"`);
  const out: Path = { attr: m[1]! };
  if (m[2] !== undefined) out.filter = { attr: m[2], value: m[3]! };
  if (m[4] !== undefined) out.sub = m[4];
  return out;
}

const matches = (item: unknown, f: { attr: string; value: string }): boolean =>
  typeof item === "object" &&
  item !== null &&
  String((item as Json)[keyOf(item as Json, f.attr)]).toLowerCase() === f.value.toLowerCase();

/** Applies the operations in order to a copy of `resource`; answers the copy. */
export function applyPatch(resource: Json, ops: readonly PatchOp[]): Json {
  const out = structuredClone(resource);
  for (const raw of ops) {
    const op = String(raw.op ?? "").toLowerCase();
    if (op !== "add" && op !== "replace" && op !== "remove") throw bad(`unknown PATCH op "${raw.op}"`);
    if (raw.path === undefined || raw.path === "") {
      if (op === "remove") throw bad("a remove needs a path");
      if (typeof raw.value !== "object" || raw.value === null)
        throw bad("a PATCH without a path needs an object value");
      for (const [k, v] of Object.entries(raw.value as Json)) {
        if (k.includes(".") || k.includes("[")) applyPatchOne(out, op, k, v);
        else set(out, k, op, v);
      }
      continue;
    }
    applyPatchOne(out, op, raw.path, raw.value);
  }
  return out;
}

function set(obj: Json, attr: string, op: string, value: unknown): void {
  const key = keyOf(obj, attr);
  const v = booleanish(value);
  if (op === "add" && Array.isArray(obj[key]) && Array.isArray(v)) {
    const list = obj[key] as unknown[];
    for (const item of v) if (!list.some((x) => JSON.stringify(x) === JSON.stringify(item))) list.push(item);
  } else if (op === "add" && Array.isArray(obj[key]) && typeof v === "object" && v !== null) {
    (obj[key] as unknown[]).push(v);
  } else if (typeof v === "object" && v !== null && !Array.isArray(v) && typeof obj[key] === "object" && obj[key]) {
    Object.assign(obj[key] as Json, v);
  } else obj[key] = v;
}

function applyPatchOne(out: Json, op: string, path: string, value: unknown): void {
  const p = parsePath(path);
  const key = keyOf(out, p.attr);
  if (!p.filter) {
    if (p.sub === undefined) {
      if (op === "remove") delete out[key];
      else set(out, p.attr, op, value);
      return;
    }
    const parent = (typeof out[key] === "object" && out[key] !== null ? out[key] : (out[key] = {})) as Json;
    if (op === "remove") delete parent[keyOf(parent, p.sub)];
    else set(parent, p.sub, op, value);
    return;
  }
  const list = Array.isArray(out[key]) ? (out[key] as unknown[]) : (out[key] = []);
  const filter = p.filter;
  if (op === "remove") {
    if (p.sub === undefined) out[key] = (list as unknown[]).filter((i) => !matches(i, filter));
    else for (const i of list as Json[]) if (matches(i, filter)) delete i[keyOf(i, p.sub)];
    return;
  }
  let hit = (list as Json[]).filter((i) => matches(i, filter));
  if (hit.length === 0) {
    // `emails[type eq "work"].value` on a user without a work address: the item is made
    const made: Json = { [filter.attr]: filter.value };
    (list as Json[]).push(made);
    hit = [made];
  }
  for (const i of hit) {
    if (p.sub === undefined) Object.assign(i, value as Json);
    else set(i, p.sub, "replace", value);
  }
}
