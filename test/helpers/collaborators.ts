// The collaborators a production class takes, made for tests the way the composition root
// (src/parts/) makes them: the same policy with the gateway's rules, the same mail door, the same
// resolver. A test that builds a class alone takes them from here, so it never meets a weaker
// product than the daemon runs.
import { testLedger } from "./ledger.js";
import { systemClock, type Clock } from "../../src/clock.js";
import {
  configSchema,
  type Config,
  type ApiConfig,
  type PartialMode,
  type QueueConfig,
  type SmtpConfig,
  type SpoolConfig,
} from "../../src/config/schema.js";
import { Dispatcher, dispatcherOwner, type DispatcherOptions } from "../../src/dispatch/dispatcher.js";
import { makeResolver, type DnsResolve } from "../../src/dns/resolver.js";
import type { UserDirectory } from "../../src/fax/user-directory.js";
import { MailDoor } from "../../src/intake/mail-door.js";
import { QueuePressure } from "../../src/intake/queue-pressure.js";
import type { DocumentConverter } from "../../src/intake/office/convert-queue.js";
import { OfficeConverter, type OfficeOptions } from "../../src/intake/office/office-convert.js";
import { officeOptions } from "../../src/parts/converters.js";
import type { DestinationCheck } from "../../src/recipients/destination-policy.js";
import { destinationPolicy } from "../../src/recipients/recipients.js";
import { silentLogger, type Logger } from "../../src/log/logger.js";
import { Metrics } from "../../src/metrics/metrics.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import type { InputReaders } from "../../src/intake/reader-pool.js";
import { ReceivedFaxIntake, type ReceivedIntakeOptions } from "../../src/inbound/received-intake.js";

/** The config a file without these keys has: every default as the schema gives it. */
export function defaultConfig(): Config {
  return configSchema.parse({});
}

/** A spool section with the schema's defaults for what `over` leaves out. */
export function testSpool(root: string, over: Record<string, unknown> = {}): SpoolConfig {
  return configSchema.parse({ spool: { root, ...over } }).spool!;
}

type UserRules = Parameters<typeof destinationPolicy>[1] extends () => ReadonlyArray<infer U> ? U : never;

/** The destination policy as the daemon has it: these users' rules, then the gateway's (default: the config's defaults). */
export function testPolicy(
  users: () => ReadonlyArray<UserRules> = () => [],
  gateway: () => Config["destinations"] = () => defaultConfig().destinations,
): DestinationCheck {
  return destinationPolicy(gateway, users);
}

/** The DNS resolver as the daemon makes it from `dns` (default: the system's servers). */
export function testResolver(dns: Partial<Config["dns"]> = {}): DnsResolve {
  return makeResolver({ ...defaultConfig().dns, ...dns });
}

/** The busy answer as src/parts/core.ts builds it: the schema's queue.maxWaiting unless given. */
export function testPressure(
  store: Pick<QueueStore, "counts">,
  maxWaiting = defaultConfig().queue.maxWaiting,
  clock: Clock = systemClock,
  metrics?: Metrics,
): QueuePressure {
  return new QueuePressure(store, maxWaiting, clock, metrics);
}

/** The office converter with the config's defaults (LibreOffice from PATH) and `over`; its owner closes it. */
export function testOffice(over: Partial<OfficeOptions> = {}): OfficeConverter {
  return new OfficeConverter({ ...officeOptions(defaultConfig().office), ...over });
}

export interface MailDoorParts {
  dataDir: string;
  store: QueueStore;
  directory: UserDirectory;
  readers: InputReaders;
  office: DocumentConverter;
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
  smtp: SmtpConfig;
  partial?: PartialMode;
}

/** The one mail door as parts/mail-door.ts builds it, opened (incoming/ made). */
export async function testMailDoor(p: MailDoorParts): Promise<MailDoor> {
  const door = new MailDoor({
    dataDir: p.dataDir,
    maxMessageBytes: p.smtp.maxMessageBytes,
    maxMessageAgeHours: p.smtp.senderAuth.maxMessageAgeHours,
    store: p.store,
    ledger: testLedger(p.store),
    log: p.logger,
    metrics: p.metrics,
    pressure: testPressure(p.store, undefined, p.clock, p.metrics),
    readers: p.readers,
    directory: p.directory,
    clock: p.clock,
    inlineImageMinBytes: p.smtp.inlineImageMinBytes,
    office: p.office,
    partial: p.partial ?? defaultConfig().intake.partial,
  });
  await door.open();
  return door;
}

/**
 * What a Dispatcher takes besides its store, clients and config, as parts/dispatch.ts gives it:
 * spread first, so a test's own clock or policy wins.
 */
export function testDispatchParts(users: () => ReadonlyArray<UserRules> = () => []): {
  clock: Clock;
  owner: string;
  metrics: Metrics;
  destinations: DestinationCheck;
} {
  return { clock: systemClock, owner: dispatcherOwner(), metrics: new Metrics(), destinations: testPolicy(users) };
}

/**
 * The one way a test builds a Dispatcher alone: what parts/dispatch.ts gives it (testDispatchParts),
 * the config's defaults for `api` and `queue` with the test's values over them, a silent logger
 * unless one is given; anything else in `p` wins.
 */
export function testDispatcher(
  p: Pick<DispatcherOptions, "store" | "clientFor"> &
    Partial<Omit<DispatcherOptions, "api" | "queue">> & { api?: Partial<ApiConfig>; queue?: Partial<QueueConfig> },
): Dispatcher {
  const { api, queue, ...rest } = p;
  const defaults = defaultConfig();
  return new Dispatcher({
    ...testDispatchParts(),
    ledger: testLedger(p.store),
    logger: silentLogger(),
    ...rest,
    api: { ...defaults.api, ...api },
    queue: { ...defaults.queue, ...queue },
  });
}

/**
 * The one door for received faxes as parts/notify.ts builds it (ReceivedFaxIntake), the one way a
 * test builds it: the schema's `inbound` (no rules; the default route mails the receiving user),
 * the store's own ledger and a silent logger unless given; anything else in `p` wins.
 */
export function testIntake(
  p: Pick<ReceivedIntakeOptions, "store" | "clientFor" | "users" | "me" | "dataDir"> & Partial<ReceivedIntakeOptions>,
): ReceivedFaxIntake {
  const inbound = defaultConfig().inbound;
  return new ReceivedFaxIntake({
    inbound: () => inbound,
    ledger: testLedger(p.store),
    logger: silentLogger(),
    ...p,
  });
}
