// A message's header block and its Authentication-Results fields (RFC 8601): the one parser of
// verdict headers for every door (the SMTP relay check and the mailbox intake). Only the shape is
// read here; whose header may be believed, and what it decides, is relay-verdict.ts.
import type { Readable } from "node:stream";

/** Headers past this are not looked at: a relay puts its own on top. */
const HEADER_LIMIT = 256 * 1024;

/** The message's header block (up to its blank line, at most 256 KB). */
export async function readHeaderBlock(message: Buffer | Readable): Promise<string> {
  if (Buffer.isBuffer(message)) return headerPart(message);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of message) {
    const b = chunk as Buffer;
    chunks.push(b);
    size += b.length;
    const sofar = Buffer.concat(chunks);
    if (size >= HEADER_LIMIT || sofar.includes("\n\n") || sofar.includes("\n\r\n")) {
      message.destroy();
      return headerPart(sofar);
    }
  }
  return headerPart(Buffer.concat(chunks));
}

// The end is found in the bytes and only the header block is made a string: the whole message
// as text (100 KB and more a mail) was 8% of the daemon's main thread for relayed mail (the
// daemon bench's 100 KB rows, docs/bench.md, issue 54).
function headerPart(buf: Buffer): string {
  const head = buf.subarray(0, HEADER_LIMIT);
  const end = headerEnd(head);
  return head.toString("latin1", 0, end < 0 ? head.length : end);
}

/** Where the first empty line's line break starts (what /\r?\n\r?\n/ finds), or -1. */
function headerEnd(buf: Buffer): number {
  // CR LF first, then LF LF only before it: a CR LF mail has no "\n\n", and that search alone
  // went through the whole message
  const b = buf.indexOf("\n\r\n");
  const a = (b < 0 ? buf : buf.subarray(0, b + 1)).indexOf("\n\n");
  const lf = a < 0 ? b : a;
  if (lf < 0) return -1;
  return lf > 0 && buf[lf - 1] === 0x0d ? lf - 1 : lf;
}

/** Unfolded fields named `name` (lower case), top first. */
export function headerFields(block: string, name: string): string[] {
  const out: string[] = [];
  for (const field of block.split(/\r?\n(?![ \t])/)) {
    const colon = field.indexOf(":");
    if (colon <= 0 || field.slice(0, colon).trim().toLowerCase() !== name) continue;
    out.push(
      field
        .slice(colon + 1)
        .replace(/\r?\n[ \t]+/g, " ")
        .trim(),
    );
  }
  return out;
}

export interface AuthResult {
  method: string;
  result: string;
  /** property -> value, keys as written lower-cased: header.from, smtp.mailfrom, header.d... */
  props: Record<string, string>;
}

export interface AuthResultsField {
  /**
   * Who wrote it (lower case), or null for a field that names nobody: Exchange Online writes
   * `Authentication-Results: spf=pass ...; dmarc=pass ...` with no authserv-id (RFC 8601 wants one).
   */
  authservId: string | null;
  results: AuthResult[];
}

/** Comments (nested parentheses) out, quoted strings kept whole; null when they do not close. */
function stripComments(value: string): string | null {
  let out = "";
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i += 1) {
    const c = value[i]!;
    if (quoted) {
      out += c;
      if (c === "\\" && i + 1 < value.length) out += value[++i];
      else if (c === '"') quoted = false;
    } else if (c === "(") depth += 1;
    else if (c === ")" && depth > 0) depth -= 1;
    else if (depth === 0) {
      if (c === '"') quoted = true;
      out += c;
    }
  }
  return depth === 0 && !quoted ? out : null;
}

/** The parts between semicolons, a quoted `reason="a; b"` kept whole. */
function splitOutsideQuotes(text: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quoted && c === "\\" && i + 1 < text.length) {
      cur += c + text[++i];
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ";" && !quoted) {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out;
}

const RESULT = /^([a-z0-9_-]+)(?:\/\d+)?=([a-z]+)$/i;
const AUTHSERV_ID = /^[a-z0-9_.:[\]-]+$/i;

function parseResult(part: string): AuthResult | null {
  const tokens = part.split(/\s+/).filter(Boolean);
  const head = RESULT.exec(tokens.shift() ?? "");
  if (!head) return null;
  const props: Record<string, string> = {};
  for (const t of tokens) {
    const eq = t.indexOf("=");
    if (eq > 0) props[t.slice(0, eq).toLowerCase()] = t.slice(eq + 1).replace(/^"|"$/g, "");
  }
  return { method: head[1]!.toLowerCase(), result: head[2]!.toLowerCase(), props };
}

/**
 * One Authentication-Results value, or null when it does not have the field's shape (an empty
 * value, comments that do not close, an authserv-id that is not a name, a result that is not
 * `method=result`). A field that cannot be read is never skipped over by the callers.
 */
export function parseAuthResults(value: string): AuthResultsField | null {
  const text = stripComments(value.replace(/\r?\n[ \t]+/g, " "));
  if (text === null) return null;
  const parts = splitOutsideQuotes(text)
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 0) return null;
  let authservId: string | null = null;
  // "mx.google.com" or "mx.example.com 1" (a version after the id); a first part that is already a
  // result names nobody
  if (!parts[0]!.split(/\s+/)[0]!.includes("=")) {
    const [id, version, ...rest] = parts.shift()!.split(/\s+/);
    if (!AUTHSERV_ID.test(id!) || (version !== undefined && !/^\d+$/.test(version)) || rest.length > 0) return null;
    authservId = id!.toLowerCase();
  }
  // "none": the host checked nothing (RFC 8601 2.2)
  if (parts.length === 1 && parts[0]!.toLowerCase() === "none") return { authservId, results: [] };
  const results: AuthResult[] = [];
  for (const part of parts) {
    const r = parseResult(part);
    if (!r) return null;
    results.push(r);
  }
  if (authservId === null && results.length === 0) return null;
  return { authservId, results };
}
