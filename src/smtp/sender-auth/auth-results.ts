// A message's header block and its Authentication-Results fields (RFC 8601), read for what a
// trusted relay recorded. Only the shape is parsed here; what the results decide is
// relay-results.ts.
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

function headerPart(buf: Buffer): string {
  const text = buf.subarray(0, HEADER_LIMIT).toString("latin1");
  const end = /\r?\n\r?\n/.exec(text);
  return end ? text.slice(0, end.index) : text;
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
  authservId: string;
  results: AuthResult[];
}

/** Comments (nested parentheses) out, quoted strings kept whole. */
function stripComments(value: string): string {
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
  return out;
}

/** One Authentication-Results value, or null when it does not have the field's shape. */
export function parseAuthResults(value: string): AuthResultsField | null {
  const parts = stripComments(value)
    .split(";")
    .map((p) => p.trim());
  const id = parts.shift()?.split(/\s+/)[0]?.toLowerCase();
  if (!id) return null;
  const results: AuthResult[] = [];
  for (const part of parts) {
    const tokens = part.split(/\s+/).filter(Boolean);
    const head = /^([a-z0-9-]+)(?:\/\d+)?=([a-z]+)$/i.exec(tokens.shift() ?? "");
    if (!head) continue;
    const props: Record<string, string> = {};
    for (const t of tokens) {
      const eq = t.indexOf("=");
      if (eq > 0) props[t.slice(0, eq).toLowerCase()] = t.slice(eq + 1).replace(/^"|"$/g, "");
    }
    results.push({ method: head[1]!.toLowerCase(), result: head[2]!.toLowerCase(), props });
  }
  return { authservId: id, results };
}
