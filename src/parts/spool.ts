// The print folders: a watcher per user (folders made for new users at a reload, dropped for
// removed ones) and the sweep that ends print jobs whose owner never gave a number.
import { smtpSettings } from "../config/index.js";
import { AddressExpiry, SpoolWatcher, type SpoolWatcherOptions } from "../spool/index.js";
import type { Converters } from "./converters.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { LegalHolds } from "../retention/index.js";
import { childLog } from "../log/index.js";

export interface SpoolParts {
  addressExpiry: AddressExpiry | null;
  /** the watcher the "spool" part starts and stops (tests restart and stop it themselves) */
  watcher: SpoolWatcher | null;
  parts: Part[];
}

/**
 * The watcher's settings that are no config keys: the daemon passes none (the watcher's defaults).
 * The test builder passes short intervals and the rescan and sweep hooks, so that suites wait for
 * a rescan or sweep to have happened instead of sleeping; and how file calls are made, so that
 * both ways (main thread, thread pool) are tested on one local disk.
 */
export type SpoolTuning = Pick<
  SpoolWatcherOptions,
  "rescanMs" | "sweepMs" | "retryMs" | "onSweep" | "onRescan" | "concurrency" | "folderCalls"
>;

export function createSpool(core: Core, conv: Converters, tuning: SpoolTuning = {}): SpoolParts {
  const { config, live, addresses } = core;
  const spool = config.spool;
  if (!spool) return { addressExpiry: null, watcher: null, parts: [] };
  const log = childLog(core.logger, { component: "spool" });
  const holds = new LegalHolds({ store: core.store, ledger: core.ledger });
  const watcher = new SpoolWatcher({
    store: core.store,
    ledger: core.ledger,
    clock: core.clock,
    metrics: core.metrics,
    pressure: core.pressure,
    destinations: core.destinations,
    spool,
    users: live.users(),
    left: live.leavers(),
    defaultCountryCode: smtpSettings(config).defaultCountryCode,
    readers: conv.readers,
    office: conv.convertQueue,
    clientFor: (user) => core.api.clientFor(user, "intake"),
    logger: core.refusals.tap(log, "spool"),
    // the retention rule's times; a user under a legal hold keeps every original
    retention: {
      done: config.retention.spoolDone,
      failed: config.retention.spoolFailed,
      prunable: async (user) => !(await holds.holdsUser(user)),
    },
    ...tuning,
  });
  // leavers too: the directory's change that ends a person also ends their folder's intake
  live.onUsersChanged((users) => watcher.updateUsers([...users], live.leavers()));
  const addressExpiry = new AddressExpiry({
    store: core.store,
    clock: core.clock,
    waitMs: spool.addressWait,
    logger: log,
  });
  const parts: Part[] = [
    { name: "address expiry", start: () => addressExpiry.start(), stop: () => addressExpiry.stop() },
    {
      name: "spool",
      start: async () => {
        await watcher.start();
        addresses.spoolRoot = spool.root;
      },
      stop: () => watcher.stop(),
      checks: () => ({ spool: { ok: addresses.spoolRoot !== null } }),
    },
  ];
  return { addressExpiry, watcher, parts };
}
