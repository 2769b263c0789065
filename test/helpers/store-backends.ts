// Both queue backends behind one factory, for the store contract suite and the tests that must hold
// on either: SQLite in a temp folder, or PostgreSQL in a fresh database of a private cluster
// (test/helpers/pg-cluster.ts), each with its own instance data folder; and that cluster's hooks
// and skip message, written once for every file that uses one (`usePgCluster`).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Clock } from "../../src/clock.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { afterAll, afterEach, beforeAll } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "./pg-cluster.js";

export type BackendName = "sqlite" | "postgres";

export interface StoreOpts {
  clock?: Clock;
  dedupeWindowMs?: number;
}

export interface BackendStore {
  store: QueueStore;
  /** A temp folder for input files. */
  dir: string;
  /** Another store on the same queue (another process, another gateway), with its own data folder. */
  reopen(opts?: StoreOpts): Promise<QueueStore>;
  /** postgres only: the database URL. */
  url?: string;
  cleanup(): Promise<void>;
}

export async function openBackend(
  name: BackendName,
  cluster: PgCluster | null,
  opts: StoreOpts = {},
): Promise<BackendStore> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `faxgate-${name}-`));
  const opened: QueueStore[] = [];
  let url: string | undefined;
  let instance = 0;
  if (name === "postgres") {
    if (!cluster) throw new Error("no PostgreSQL cluster");
    url = await cluster.createDatabase();
  }
  const open = async (o: StoreOpts = opts): Promise<QueueStore> => {
    // SQLite: every process opens the same data folder; PostgreSQL: each gateway has its own
    const s: QueueStore =
      name === "sqlite"
        ? SqliteStore.open({ dataDir: path.join(dir, "data"), clock: o.clock, dedupeWindowMs: o.dedupeWindowMs })
        : await PgStore.open({
            url: url!,
            dataDir: path.join(dir, `data-${++instance}`),
            clock: o.clock,
            dedupeWindowMs: o.dedupeWindowMs,
          });
    opened.push(s);
    return s;
  };
  const store = await open();
  return {
    store,
    dir,
    url,
    reopen: open,
    async cleanup() {
      for (const s of opened) await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface FilePg {
  /** Why this machine cannot run PostgreSQL (the tests skip with it), or null. */
  missing: string | null;
  /** The cluster while it runs (inside the tests and the hooks after it started), else null. */
  readonly cluster: PgCluster | null;
  /** A fresh database on the cluster (its URL); throws where there is no cluster. */
  database(): Promise<string>;
  /** Whether a test on `backend` skips here: PostgreSQL's do where it is missing. */
  skips(backend: BackendName): boolean;
  /**
   * In a test: a store on `backend` (on PostgreSQL in a fresh database), closed and its folder
   * removed after the test. (A store a whole describe shares: `openBackend` in its beforeAll.)
   */
  open(backend: BackendName, opts?: StoreOpts): Promise<BackendStore>;
}

/**
 * A private cluster for the tests of a file (or of the describe it is called in): started before
 * them, destroyed after them; the stores its tests `open` are cleaned up after each. Where
 * PostgreSQL is missing, nothing starts and the reason is said once for `what` (the part that
 * skips: "store contract: PostgreSQL tests").
 */
export function usePgCluster(what: string): FilePg {
  const missing = pgAvailable();
  if (missing) console.warn(`${what} skipped: ${missing}`);
  let cluster: PgCluster | null = null;
  beforeAll(async () => {
    if (!missing) cluster = await startPgCluster();
  }, 120_000);
  afterAll(() => {
    cluster?.destroy();
    cluster = null;
  });
  const opened: BackendStore[] = [];
  afterEach(async () => {
    for (const b of opened.splice(0)) await b.cleanup();
  });
  return {
    missing,
    get cluster() {
      return cluster;
    },
    database() {
      if (!cluster) throw new Error(`no PostgreSQL cluster: ${missing ?? "not started"}`);
      return cluster.createDatabase();
    },
    skips: (backend) => backend === "postgres" && missing !== null,
    async open(backend, opts) {
      const b = await openBackend(backend, cluster, opts);
      opened.push(b);
      return b;
    },
  };
}
