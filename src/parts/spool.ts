// The print folders: a watcher per user (folders made for new users at a reload, dropped for
// removed ones) and the sweep that ends print jobs whose owner never gave a number.
import { smtpSettings } from "../config/index.js";
import { AddressExpiry, SpoolWatcher } from "../spool/index.js";
import type { Converters } from "./converters.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { LegalHolds } from "../retention/index.js";

export interface SpoolParts {
  addressExpiry: AddressExpiry | null;
  parts: Part[];
}

export function createSpool(core: Core, conv: Converters): SpoolParts {
  const { config, live, addresses } = core;
  const spool = config.spool;
  if (!spool) return { addressExpiry: null, parts: [] };
  const log = core.logger.child({ component: "spool" });
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
  return { addressExpiry, parts };
}
