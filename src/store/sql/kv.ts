// Small durable key/value state: the inbound cursor per user, key holds, first-start markers.
import type { Db } from "./db.js";

export async function getState(db: Db, key: string): Promise<string | null> {
  return (await db.get<{ value: string }>("SELECT value FROM kv WHERE key = ?", [key]))?.value ?? null;
}

export async function setState(db: Db, key: string, value: string): Promise<void> {
  await db.run("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [
    key,
    value,
  ]);
}

/** The value under `key`, set to `value` first when there is none: every caller gets the first one written. */
export async function stateOnce(db: Db, key: string, value: string): Promise<string> {
  await db.run("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, value]);
  return (await getState(db, key)) ?? value;
}
