// What a SIGHUP cannot apply: every setting but users, destinations and inbound is read once at
// start (listeners, the webhook receiver, the store, timers). A reload that changes one says so in
// the log and leaves a note in the store that `faxgate status` shows, until the next start.
import os from "node:os";
import type { Config } from "./schema.js";

/** The top-level keys a SIGHUP applies (parts/live-settings.ts). */
export const RELOADABLE: readonly string[] = ["users", "destinations", "inbound"];

/** The store's key of this host's note (PostgreSQL is shared by several gateways). */
export function restartNoteKey(host = os.hostname()): string {
  return `reload.restartNeeded:${host}`;
}

export interface RestartNote {
  /** The settings changed since start that only a restart applies ("webhooks", "smtp.listen"). */
  settings: string[];
  at: string;
}

/** The changed settings, as "key" or "key.child" (one level down), in the config's order. */
export function restartOnlyChanges(running: Config, next: Config): string[] {
  const out: string[] = [];
  const a = running as unknown as Record<string, unknown>;
  const b = next as unknown as Record<string, unknown>;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (RELOADABLE.includes(key) || same(a[key], b[key])) continue;
    const x = a[key];
    const y = b[key];
    if (isPlain(x) && isPlain(y)) {
      for (const child of new Set([...Object.keys(x), ...Object.keys(y)]))
        if (!same(x[child], y[child])) out.push(`${key}.${child}`);
    } else out.push(key);
  }
  return out;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function same(x: unknown, y: unknown): boolean {
  return JSON.stringify(x) === JSON.stringify(y);
}
