// Small durable key/value state: the inbound cursor per user, key holds, first-start markers.
import type { PgContext } from "./context.js";

export async function getState(ctx: PgContext, key: string): Promise<string | null> {
  const r = await ctx.q<{ value: string }>("read state", "SELECT value FROM kv WHERE key = $1", [key]);
  return r.rows[0]?.value ?? null;
}

export async function setState(ctx: PgContext, key: string, value: string): Promise<void> {
  await ctx.q(
    "write state",
    "INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    [key, value],
  );
}
