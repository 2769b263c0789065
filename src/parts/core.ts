// What every part's factory is built from: the config as started, the live settings (users and
// what a SIGHUP reloads), the queue, the clock, the logger, the metrics, the API clients and the
// few shared pieces of intake. main.ts builds it once; each factory takes what it needs.
import type { Clock } from "../clock.js";
import { type FleetCounters, localCounters, postgresCounters } from "../fleet-counter.js";
import { type Config, preferenceRefreshMs } from "../config/index.js";
import { UserDirectory } from "../fax/index.js";
import { QueuePressure } from "../intake/index.js";
import { type DestinationCheck, destinationPolicy } from "../recipients/index.js";
import type { SqlLedger } from "../ledger/index.js";
import type { Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import type { QueueStore } from "../store/index.js";
import { RefusalLog } from "../web/index.js";
import { ApiClients, type ServiceEndpoint } from "./api.js";
import { createLedger } from "./ledger.js";
import { LiveSettings } from "./live-settings.js";

export interface RunningAddresses {
  smtp: Array<{ host: string; port: number }>;
  admin: { host: string; port: number } | null;
  spoolRoot: string | null;
  outbox: string | null;
  /** where the webhook receiver listens, when `webhooks` is configured */
  webhooks?: { host: string; port: number } | null;
  /** where the web console listens, when `web` is configured */
  web?: { host: string; port: number } | null;
}

export interface Core {
  /** The config as started; what a reload changes is read from `live`. */
  config: Config;
  live: LiveSettings;
  store: QueueStore;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  api: ApiClients;
  /** One destination policy for every path, reading the live rules. */
  destinations: DestinationCheck;
  /** Each user's /v1/me (preferences), read through the intake class of the gate. */
  directory: UserDirectory;
  /** Recent SMTP, spool and mailbox refusals, for the console's operator page. */
  refusals: RefusalLog;
  /** queue.maxWaiting: every door's "busy, try again" once that many faxes wait to be sent. */
  pressure: QueuePressure;
  /** Filled in by the parts that listen, as they start. */
  addresses: RunningAddresses;
  /** The compliance ledger: every door and stage that records an event records it here. */
  ledger: SqlLedger;
  /** Lockouts and rates counted across the fleet (PostgreSQL), or by this gateway alone (SQLite). */
  counters: FleetCounters;
}

export interface CoreOptions {
  config: Config;
  service: ServiceEndpoint;
  store: QueueStore;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

/** The shared pieces, built once; API clients and preferences are built again when the users change. */
export function createCore(opts: CoreOptions): Core {
  const { config, clock, logger } = opts;
  const live = new LiveSettings(config, logger);
  // a fleet on one PostgreSQL counts lockouts and rates once, in the store (docs/ha.md)
  const counters = opts.store.fleetPool ? postgresCounters(opts.store.fleetPool) : localCounters;
  const api = new ApiClients({ ...opts, users: () => live.users(), counters });
  // the preferences mail intake reads while a sender waits: the intake class of the gate
  const directory = new UserDirectory({
    clientFor: (user) => api.clientFor(user, "intake"),
    refreshMs: preferenceRefreshMs(config),
    clock,
  });
  live.onUsersChanged(() => {
    api.usersChanged();
    directory.invalidate();
  });
  return {
    config,
    live,
    store: opts.store,
    clock,
    logger,
    metrics: opts.metrics,
    api,
    destinations: destinationPolicy(
      () => live.config().destinations,
      () => live.users(),
    ),
    directory,
    refusals: new RefusalLog(() => clock.now()),
    pressure: new QueuePressure(opts.store, config.queue.maxWaiting, clock, opts.metrics),
    addresses: { smtp: [], admin: null, spoolRoot: null, outbox: null },
    ledger: createLedger(config, opts.store, { create: true, log: logger }),
    counters,
  };
}
