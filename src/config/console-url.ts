// The console's address as people reach it, from the config alone (the CLI has no listener to ask):
// web.publicUrl, else web.listen with https when web.tls is set. Null without a console, or when
// it listens on port 0 (a test's free port, known only to the running daemon).
import os from "node:os";
import type { WebConfig } from "./schema.js";

export function configuredConsoleUrl(web: WebConfig | undefined | null): string | null {
  if (!web) return null;
  if (web.publicUrl) return web.publicUrl.replace(/\/+$/, "");
  const m = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d+)$/.exec(web.listen);
  if (!m || m[3] === "0") return null;
  const bound = (m[1] ?? m[2])!;
  const host = bound === "0.0.0.0" || bound === "::" ? os.hostname() : bound.includes(":") ? `[${bound}]` : bound;
  return `${web.tls ? "https" : "http"}://${host}:${m[3]}`;
}
