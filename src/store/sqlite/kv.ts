// Small durable key/value state: the inbound cursor per user, key holds, first-start markers.
import type { SqliteContext } from "./context.js";

export function getState(c: SqliteContext, key: string): string | null {
  const r = c.sql("SELECT value FROM kv WHERE key = ?").get(key) as { value: string } | undefined;
  return r ? r.value : null;
}

export function setState(c: SqliteContext, key: string, value: string): void {
  c.sql("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(
    key,
    value,
  );
}
