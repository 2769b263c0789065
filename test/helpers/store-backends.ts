// Both queue backends behind one factory, for the store contract suite and the tests that must hold
// on either: SQLite in a temp folder, or PostgreSQL in a fresh database of a private cluster
// (test/helpers/pg-cluster.ts), each with its own instance data folder.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Clock } from "../../src/clock.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { PgCluster } from "./pg-cluster.js";

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
