// The data folder is taken in one place: made (mode 0750), locked against a second daemon, and its
// queue opened (SQLite in the folder, or the PostgreSQL database the config names). `faxgate
// start` locks it first, before a sandbox writes into it, and hands the lock on.
import { mkdirSync } from "node:fs";
import type { Clock } from "../clock.js";
import type { Config } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import { childLog, type Logger } from "../log/index.js";
import { DaemonLock, openLocalStore, openStore, type OpenStoreOptions, type QueueStore } from "../store/index.js";
import type { Part } from "./part.js";

export interface HeldFolder {
  lock: DaemonLock;
  store: QueueStore;
}

/** What the caller may have taken already; the rest is taken here. */
export interface HoldOptions {
  lock?: DaemonLock;
  store?: QueueStore;
  clock?: Clock;
  logger: Logger;
}

/** The folder made and locked (a second daemon on it is refused with the holder's pid). */
export function lockDataFolder(dataDir: string): DaemonLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o750 });
  return DaemonLock.acquire(dataDir);
}

function storeOptions(config: Config, opts: HoldOptions): OpenStoreOptions {
  return {
    dataDir: config.data,
    database: config.database,
    clock: opts.clock,
    logger: childLog(opts.logger, { component: "store" }),
    daemon: true,
  };
}

/** The folder locked and its queue open, either backend; a lock taken here is let go if the open fails. */
export async function openDataFolder(config: Config, opts: HoldOptions): Promise<HeldFolder> {
  const lock = opts.lock ?? lockDataFolder(config.data);
  try {
    return { lock, store: opts.store ?? (await openStore(storeOptions(config, opts))) };
  } catch (err) {
    if (!opts.lock) lock.release();
    throw err;
  }
}

/** The same at once, for code that cannot wait: the SQLite queue only. */
export function holdDataFolder(config: Config, opts: HoldOptions): HeldFolder {
  if (config.database && !opts.store)
    throw new FaxgateError(
      "INTERNAL",
      "a PostgreSQL queue (database:) is opened by Gateway.open, not by the constructor",
    );
  const lock = opts.lock ?? lockDataFolder(config.data);
  try {
    return { lock, store: opts.store ?? openLocalStore(storeOptions(config, opts)) };
  } catch (err) {
    if (!opts.lock) lock.release();
    throw err;
  }
}

/**
 * The queue and the lock as parts: at start the work an earlier run left mid-way is taken back;
 * at stop the queue closes, then the lock goes.
 */
export function dataFolderParts(held: HeldFolder, log: Logger): Part[] {
  const { lock, store } = held;
  return [
    { name: "lock", stop: () => lock.release() },
    {
      name: "store",
      // No other daemon can hold a lease on this queue (we hold the data folder's lock): sends and
      // notifications an earlier run left mid-way are taken back now, not when their leases run out.
      // On PostgreSQL other gateways share the queue and may be mid-send: leases there only ever
      // expire by time (the dispatcher's passes release them), never all at once at a start.
      start: async () => {
        if (store.backend !== "sqlite") return;
        const taken = await store.releaseExpired({ all: true });
        if (taken.unknown + taken.released > 0)
          log.warn(
            { unknownSends: taken.unknown, leases: taken.released },
            "took back the work of an earlier run that did not stop cleanly",
          );
      },
      stop: () => store.close(),
    },
  ];
}
