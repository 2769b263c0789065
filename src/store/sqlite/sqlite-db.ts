// The query layer's port (../sql/db.ts) on better-sqlite3: synchronous statements behind an
// asynchronous face. The connection holds one transaction at a time, so a transaction takes its
// turn (`turn`): while one is open, the others, and statements outside any, wait for it to end.
// Without that, another caller's statement could run inside it between two of its awaits.
import type Database from "better-sqlite3";
import type { Clock } from "../../clock.js";
import { FaxgateError, isFaxgateError } from "../../errors.js";
import { type Db, type Runner, type RunResult, type Sql, textFor, type TxOptions } from "../sql/db.js";

export class SqliteDb implements Db {
  readonly dialect = "sqlite" as const;
  /** Resolves when the open transaction ends; null when none is open. */
  private turn: Promise<void> | null = null;
  private readonly inside: Runner;

  /**
   * `sql`: the store's statement cache; `committed`: told of each commit (the checkpointer counts
   * toward its next WAL checkpoint).
   */
  constructor(
    private readonly db: Database.Database,
    private readonly sql: (text: string) => Database.Statement,
    readonly clock: Clock,
    private readonly committed: (blobBytes?: number) => void,
  ) {
    const stmt = (s: Sql): Database.Statement => this.sql(textFor(s, "sqlite"));
    this.inside = {
      dialect: "sqlite",
      all: async <R>(s: Sql, args: readonly unknown[] = []) => stmt(s).all(...args) as R[],
      get: async <R>(s: Sql, args: readonly unknown[] = []) => stmt(s).get(...args) as R | undefined,
      run: async (s: Sql, args: readonly unknown[] = []): Promise<RunResult> => ({
        changes: stmt(s).run(...args).changes,
      }),
      lock: async () => undefined,
      tryLock: async () => true,
    };
  }

  /** Waits for the open transaction, if any, to end. */
  private async free(): Promise<void> {
    while (this.turn) await this.turn;
  }

  async all<R>(s: Sql, args: readonly unknown[] = []): Promise<R[]> {
    if (this.turn) await this.free();
    return this.alone(s, (st) => st.all(...args) as R[]);
  }

  async get<R>(s: Sql, args: readonly unknown[] = []): Promise<R | undefined> {
    if (this.turn) await this.free();
    return this.alone(s, (st) => st.get(...args) as R | undefined);
  }

  async run(s: Sql, args: readonly unknown[] = []): Promise<RunResult> {
    if (this.turn) await this.free();
    return this.alone(s, (st) => ({ changes: st.run(...args).changes }));
  }

  /**
   * One statement on its own. A write gets a transaction of its own, BEGIN IMMEDIATE: in WAL mode
   * a lone UPDATE that read an older snapshot than another process's commit would fail as busy
   * instead of waiting (PostgreSQL runs the same statement as it is, atomic by itself).
   */
  private alone<T>(s: Sql, fn: (st: Database.Statement) => T): T {
    const st = this.sql(textFor(s, "sqlite"));
    if (st.readonly) return fn(st);
    this.sql("BEGIN IMMEDIATE").run();
    try {
      const out = fn(st);
      this.sql("COMMIT").run();
      this.committed();
      return out;
    } catch (err) {
      if (this.db.inTransaction) this.sql("ROLLBACK").run();
      throw err;
    }
  }

  /** Outside a transaction there is nothing to wait for: BEGIN IMMEDIATE is the lock. */
  async lock(_key: string): Promise<void> {}

  async tryLock(_key: string): Promise<boolean> {
    return true;
  }

  /** One process per SQLite queue (the daemon lock): no one else to tell. */
  async announce(_t: Runner, _jobId: string): Promise<void> {}

  async tx<T>(what: string, fn: (t: Runner) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    // the turn is taken in the same step that finds it free: two waiters released by one commit
    // would otherwise both go on to BEGIN ("cannot start a transaction within a transaction")
    let end!: () => void;
    while (this.turn) await this.turn;
    this.turn = new Promise((resolve) => {
      end = resolve;
    });
    try {
      // BEGIN IMMEDIATE: another process's writer makes this one wait (busy_timeout), none deadlocks
      this.sql("BEGIN IMMEDIATE").run();
      try {
        const out = await fn(this.inside);
        this.sql("COMMIT").run();
        this.committed(opts.blobBytes);
        return out;
      } catch (err) {
        if (this.db.inTransaction) this.sql("ROLLBACK").run();
        throw err;
      }
    } catch (err) {
      if (isFaxgateError(err)) throw err;
      throw new FaxgateError("STORE_UNAVAILABLE", `${what}: ${(err as Error).message}`, {
        cause: err,
        temporary: true,
      });
    } finally {
      this.turn = null;
      end();
    }
  }
}
