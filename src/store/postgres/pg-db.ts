// The query layer's port (../sql/db.ts) on the pg pool: `?` placeholders numbered once per text
// (toNumbered), transactions through PgContext.tx (retried on serialization failure or deadlock),
// statements outside one through its q (errors as STORE_UNAVAILABLE, the password never shown).
import type pg from "pg";
import {
  type Db,
  lockKey,
  type Runner,
  type RunResult,
  type Sql,
  textFor,
  toNumbered,
  type TxOptions,
} from "../sql/db.js";
import { JOBS_CHANNEL, type PgContext, type Q } from "./context.js";

const text = (s: Sql): string => toNumbered(textFor(s, "postgres"));

/** Statements on one pooled connection, inside a transaction. */
export function pgRunner(c: Q): Runner {
  return {
    dialect: "postgres",
    all: async <R>(s: Sql, args: readonly unknown[] = []) => (await c.query(text(s), args as unknown[])).rows as R[],
    get: async <R>(s: Sql, args: readonly unknown[] = []) =>
      (await c.query(text(s), args as unknown[])).rows[0] as R | undefined,
    run: async (s: Sql, args: readonly unknown[] = []): Promise<RunResult> => ({
      changes: (await c.query(text(s), args as unknown[])).rowCount ?? 0,
    }),
    lock: async (key: string) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey(key)]);
    },
    tryLock: async (key: string) =>
      (await c.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok", [lockKey(key)])).rows[0]!
        .ok,
  };
}

export function pgDb(ctx: PgContext): Db {
  const q = (s: Sql, args: readonly unknown[]): Promise<pg.QueryResult> =>
    ctx.q("the queue store", text(s), args as unknown[]);
  return {
    dialect: "postgres",
    clock: ctx.clock,
    all: async <R>(s: Sql, args: readonly unknown[] = []) => (await q(s, args)).rows as R[],
    get: async <R>(s: Sql, args: readonly unknown[] = []) => (await q(s, args)).rows[0] as R | undefined,
    run: async (s: Sql, args: readonly unknown[] = []): Promise<RunResult> => ({
      changes: (await q(s, args)).rowCount ?? 0,
    }),
    // a lock outside a transaction would end with its statement: only tx's runner has one
    lock: async () => undefined,
    tryLock: async () => false,
    announce: async (t: Runner, jobId: string) => {
      await t.run("SELECT pg_notify(?, ?)", [JOBS_CHANNEL, `${ctx.instanceTag} ${jobId}`]);
    },
    tx: <T>(what: string, fn: (t: Runner) => Promise<T>, _opts?: TxOptions) => ctx.tx(what, (c) => fn(pgRunner(c))),
  };
}
