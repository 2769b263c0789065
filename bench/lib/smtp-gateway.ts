// An SmtpGateway for the bench rows that run the receiver in the bench process, with its
// collaborators made as src/parts/ makes them (one mail door, the destination policy with the
// gateway's rules, the resolver from `dns`), loaded as the bench loads the rest (from source, or built).
import { localCounters } from "../../src/fleet-counter.js";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { SmtpConfig, UserConfig } from "../../src/config/schema.js";
import type { FaxApi } from "../../src/fax/types.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import type { InputReaders } from "../../src/intake/reader-pool.js";
import type { SmtpGateway } from "../../src/smtp/server.js";

type Load = <M>(rel: string) => Promise<M>;

/** A module of src/ as this process runs it (tsx); smtp-accept passes faxgateModule (built) instead. */
const fromSource: Load = async <M>(rel: string) =>
  (await import(pathToFileURL(path.join(ROOT, "src", `${rel}.ts`)).href)) as M;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface BenchGatewayOptions {
  smtp: SmtpConfig;
  users: UserConfig[];
  dataDir: string;
  store: QueueStore;
  clientFor: (user: string) => FaxApi;
  readers: InputReaders;
  dns?: { servers: string[] };
  /** false: a ledger that records nothing, the baseline of bench/ledger-append (default: the real one) */
  ledger?: boolean;
}

/** The gateway, its door opened; the bench closes the gateway and its own readers and store. */
export async function benchSmtpGateway(o: BenchGatewayOptions, load: Load = fromSource): Promise<SmtpGateway> {
  const { configSchema, preferenceRefreshMs } =
    await load<typeof import("../../src/config/schema.js")>("config/schema");
  const { systemClock } = await load<typeof import("../../src/clock.js")>("clock");
  const { makeResolver } = await load<typeof import("../../src/dns/resolver.js")>("dns/resolver");
  const { UserDirectory } = await load<typeof import("../../src/fax/user-directory.js")>("fax/user-directory");
  const { MailDoor } = await load<typeof import("../../src/intake/mail-door.js")>("intake/mail-door");
  const { destinationPolicy } =
    await load<typeof import("../../src/recipients/recipients.js")>("recipients/recipients");
  const { silentLogger } = await load<typeof import("../../src/log/logger.js")>("log/logger");
  const { Metrics } = await load<typeof import("../../src/metrics/metrics.js")>("metrics/metrics");
  const { QueuePressure } = await load<typeof import("../../src/intake/queue-pressure.js")>("intake/queue-pressure");
  const { SmtpGateway: Gateway } = await load<typeof import("../../src/smtp/server.js")>("smtp/server");
  const defaults = configSchema.parse({});
  const logger = silentLogger();
  const metrics = new Metrics();
  const { SqlLedger } = await load<typeof import("../../src/ledger/ledger.js")>("ledger/ledger");
  const mail = new MailDoor({
    dataDir: o.dataDir,
    maxMessageBytes: o.smtp.maxMessageBytes,
    maxMessageAgeHours: o.smtp.senderAuth.maxMessageAgeHours,
    store: o.store,
    // the ledger as the daemon records with it (its append is part of what an accept costs)
    ledger:
      o.ledger === false
        ? { rowsFor: () => [], sealSoon: () => undefined }
        : new SqlLedger(o.store.sql, Buffer.from("bench-ledger-key-0123456789abcdef0123456789")),
    log: logger,
    metrics,
    pressure: new QueuePressure(o.store, defaults.queue.maxWaiting, systemClock, metrics),
    readers: o.readers,
    directory: new UserDirectory({ clientFor: o.clientFor, refreshMs: preferenceRefreshMs(defaults) }),
    clock: systemClock,
    inlineImageMinBytes: o.smtp.inlineImageMinBytes,
    partial: defaults.intake.partial,
  });
  await mail.open();
  return new Gateway({
    smtp: o.smtp,
    users: o.users,
    mail,
    ledger:
      o.ledger === false
        ? { record: async () => undefined }
        : new SqlLedger(o.store.sql, Buffer.from("bench-ledger-key-0123456789abcdef0123456789")),
    clientFor: o.clientFor,
    logger,
    clock: systemClock,
    metrics,
    destinations: destinationPolicy(
      () => defaults.destinations,
      () => o.users,
    ),
    resolve: makeResolver({ ...defaults.dns, ...o.dns }),
    counters: localCounters,
  });
}
