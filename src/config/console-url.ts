// The console's address as people reach it, from the config alone (the CLI has no listener to ask):
// web.publicUrl, else web.listen with https when web.tls is set. Null without a console, or when
// it listens on port 0 (a test's free port, known only to the running daemon).
import os from "node:os";
import { parseHostPort } from "./host-port.js";
import type { WebConfig } from "./schema.js";

export function configuredConsoleUrl(web: WebConfig | undefined | null): string | null {
  if (!web) return null;
  if (web.publicUrl) return web.publicUrl.replace(/\/+$/, "");
  const { host: bound, port } = parseHostPort(web.listen, "web.listen");
  if (port === 0) return null;
  const host = bound === "0.0.0.0" || bound === "::" ? os.hostname() : bound.includes(":") ? `[${bound}]` : bound;
  return `${web.tls ? "https" : "http"}://${host}:${port}`;
}
