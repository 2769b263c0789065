// What every part's factory is built from: the config as started, the live settings (users and
// what a SIGHUP reloads), the queue, the clock, the logger, the metrics, the API clients and the
// few shared pieces of intake. main.ts builds it once; each factory takes what it needs.
import type { Clock } from "../clock.js";
import type { Config } from "../config/schema.js";
import type { UserDirectory } from "../fax/user-directory.js";
import type { DestinationCheck } from "../intake/destination-policy.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { QueueStore } from "../store/queue-store.js";
import type { RefusalLog } from "../web/refusals.js";
import type { ApiClients } from "./api.js";
import type { LiveSettings } from "./live-settings.js";

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
  /** Filled in by the parts that listen, as they start. */
  addresses: RunningAddresses;
}
