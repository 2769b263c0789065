// The one way a test builds a gateway (STYLE.md habit 17, after graphile-worker's single
// __tests__/helpers.ts): a config made by one builder (testConfig), then either the composition
// root in this process (startGateway: src/main.ts's Gateway, as `faxgate start` opens it) or the
// daemon itself as a child (startDaemon: the compiled CLI, `faxgate start --config`). Both get the
// emulator over real HTTPS, a fresh temp folder and the same config, so a suite can move from one
// to the other by changing the call.
import type { ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { type Clock, systemClock } from "../../src/clock.js";
import { validateConfig } from "../../src/config/load.js";
import type { Config, UserConfig } from "../../src/config/schema.js";
import type { FaxApi } from "../../src/fax/index.js";
import { createLogger, type Logger } from "../../src/log/logger.js";
import { Gateway, type GatewayOptions, type RunningAddresses, type ServiceEndpoint } from "../../src/main.js";
import { ConvertQueue, type OfficeConverter, ReaderPool } from "../../src/intake/index.js";
import type { ReaderPoolOptions } from "../../src/intake/reader-pool.js";
import { Metrics } from "../../src/metrics/index.js";
import {
  type Core,
  createConverters,
  createCore,
  createMailDoor,
  createSmtp,
  createSpool,
  dataFolderParts,
  ledgerSealPart,
  openDataFolder,
  type Part,
  startParts,
  stopParts,
} from "../../src/parts/index.js";
import type { SpoolTuning } from "../../src/parts/spool.js";
import type { SmtpGateway } from "../../src/smtp/index.js";
import type { SpoolWatcher } from "../../src/spool/index.js";
import type { QueueStore } from "../../src/store/index.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";
import { spawnCli } from "./cli.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator, type TestEmulatorOptions } from "./emulator.js";
import { OutputWatch } from "./wait.js";

/** Config sections, as a config file holds them; plain objects merge into the base, anything else replaces. */
export type Sections = Record<string, unknown>;

/** The users most suites need: alice and bob, each with her or his own key at the emulator. */
export const TEST_USERS = [
  { name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice },
  { name: "bob", email: "bob@example.com", apiKey: TEST_KEYS.bob },
];

/**
 * The raw config (before validation) of a test gateway in `dir`: the emulator as the fax service
 * (no history budget, as the test emulator has none), the data folder in `dir`, alice and bob,
 * then `sections` merged over it. What `testConfig` validates and `startDaemon` writes to a file.
 */
export function rawTestConfig(dir: string, emu: TestEmulator, sections: Sections = {}): Sections {
  const base: Sections = {
    api: { baseUrl: emu.baseUrl, caFile: emu.caFile, historyPerMinute: 600 },
    data: path.join(dir, "data"),
    users: TEST_USERS,
    // no LibreOffice started ahead of need in every test gateway (a second of CPU each on two
    // busy cores); office mails still convert, cold; test/intake/office-warm.test.ts tests warm
    office: { warm: false },
  };
  return mergeSections(base, sections);
}

/** The one config builder: `rawTestConfig` through the daemon's own validation (errors name the key). */
export function testConfig(dir: string, emu: TestEmulator, sections: Sections = {}): Config {
  return validateConfig(rawTestConfig(dir, emu, sections), "test config");
}

/** Plain objects merge key by key; arrays and values replace; `undefined` removes the key. */
export function mergeSections(base: Sections, over: Sections): Sections {
  const out: Sections = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete out[k];
    else if (isPlain(v) && isPlain(out[k])) out[k] = mergeSections(out[k] as Sections, v as Sections);
    else out[k] = v;
  }
  return out;
}

function isPlain(v: unknown): v is Sections {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export interface GatewaySpec {
  /** What the temp folder is named after (`faxgate-<name>-XXXXXX`). */
  name: string;
  /** The emulator's options (default delay 300 ms). */
  emulator?: TestEmulatorOptions;
  /**
   * An emulator the test file owns (shared by its tests, its faults set by the test): the gateway
   * talks to it, and stop() leaves it running. Without it each gateway starts its own.
   */
  sharedEmulator?: TestEmulator;
  /** Sections over the base config, or a function of the folder and emulator that makes them. */
  config?: Sections | ((at: { dir: string; emu: TestEmulator }) => Sections | Promise<Sections>);
  /** Runs in the fresh folder before the config is made (certificates, files for the first look). */
  prepare?: (dir: string) => Promise<void> | void;
}

async function prepareGateway(spec: GatewaySpec): Promise<{ dir: string; emu: TestEmulator; raw: Sections }> {
  const dir = tempFolder(spec.name);
  let emu: TestEmulator | null = null;
  try {
    await spec.prepare?.(dir);
    if (spec.sharedEmulator) {
      // the file's to stop: the gateway's stop() ends only what it started
      const shared = spec.sharedEmulator;
      const sections = typeof spec.config === "function" ? await spec.config({ dir, emu: shared }) : spec.config;
      return {
        dir,
        emu: Object.create(shared, { stop: { value: async () => undefined } }),
        raw: rawTestConfig(dir, shared, sections),
      };
    }
    const started = await startTestEmulator({ delayMs: 300, ...spec.emulator });
    // once: a test may stop the service itself (an outage) before the gateway's stop()
    const stopOnce = started.stop.bind(started);
    let stopped: Promise<void> | null = null;
    started.stop = () => (stopped ??= stopOnce());
    emu = started;
    const sections = typeof spec.config === "function" ? await spec.config({ dir, emu: started }) : spec.config;
    return { dir, emu: started, raw: rawTestConfig(dir, started, sections) };
  } catch (err) {
    await emu?.stop();
    removeFolder(dir);
    throw err;
  }
}

/** The service `faxgate start` derives from the config (src/cli/start.ts). */
function serviceOf(config: Config): ServiceEndpoint {
  const { baseUrl, caFile, adminKey } = config.api;
  return { baseUrl, caFile, adminKey };
}

export interface GatewayInProcessSpec extends GatewaySpec {
  /** "debug" (default) keeps every line in `logs`; "quiet" logs at fatal and keeps none. */
  log?: "debug" | "quiet";
  clock?: Clock;
  /** Runs after the gateway is built and before it starts (jobs for its first look). */
  beforeStart?: (gw: Gateway, dir: string) => Promise<void>;
  /**
   * The queue the gateway gets, made from the one the config opens (a proxy that stages a race at
   * one call): every part of the gateway uses it, as they would a store that behaved so.
   */
  wrapStore?: (store: QueueStore) => QueueStore;
}

export interface TestGateway {
  emu: TestEmulator;
  gw: Gateway;
  dir: string;
  config: Config;
  /** Every log line (JSON text) of the gateway; none when quiet. */
  logs: string[];
  logger: Logger;
  addresses: RunningAddresses;
  /** `http(s)://127.0.0.1:<port>` of the web console, the admin listener or the webhook receiver. */
  url(listener: "web" | "admin" | "webhooks"): string;
  /** The first SMTP listener's port. */
  smtpPort: number;
  /** A reload (as SIGHUP) with the config `change` makes of the running one. */
  reloadWith(change: (c: Config) => Config): Promise<void>;
  stop(): Promise<void>;
}

/** A gateway built by the composition root in this process, started; stop() ends it, its emulator and folder. */
export async function startGateway(spec: GatewayInProcessSpec): Promise<TestGateway> {
  const { dir, emu, raw: made } = await prepareGateway(spec);
  // tests sign in wrongly on purpose: the console's pause is 10 ms unless the test names one
  const raw = made.web ? mergeSections({ web: { authFailureDelay: "10ms" } }, made) : made;
  const logs: string[] = [];
  const logger =
    spec.log === "quiet"
      ? createLogger({ level: "fatal" })
      : createLogger({ level: "debug", destination: { write: (l: string) => void logs.push(l) } });
  let gw: Gateway | null = null;
  const stop = async () => {
    await gw?.stop();
    await emu.stop();
    removeFolder(dir);
  };
  try {
    const config = validateConfig(raw, "test config");
    let next = config;
    const opts = {
      service: serviceOf(config),
      logger,
      clock: spec.clock,
      reloadConfig: () => next,
    };
    // a PostgreSQL queue is opened by Gateway.open (as faxgate start does); a SQLite one by the
    // constructor, as the suites always did: with Gateway.open, `faxgate status` run beside it
    // (test/daemon/reload-restart) did not exit in 30 s, three runs of three; not yet understood
    gw = config.database
      ? await Gateway.open(config, opts)
      : spec.wrapStore
        ? await wrappedGateway(config, opts, spec.wrapStore)
        : new Gateway(config, opts);
    const running = gw;
    await spec.beforeStart?.(running, dir);
    const addresses = await running.start();
    const tls = Boolean((raw.web as { tls?: unknown } | undefined)?.tls);
    return {
      emu,
      gw: running,
      dir,
      config,
      logs,
      logger,
      addresses,
      url(listener) {
        const a = addresses[listener];
        if (!a) throw new Error(`this gateway has no ${listener} listener`);
        return `${listener === "web" && tls ? "https" : "http"}://127.0.0.1:${a.port}`;
      },
      smtpPort: addresses.smtp[0]?.port ?? 0,
      async reloadWith(change) {
        next = change(next);
        await running.reload();
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A SQLite gateway on the queue `wrap` makes of the one its folder holds (the lock taken as the constructor takes it). */
async function wrappedGateway(
  config: Config,
  opts: GatewayOptions,
  wrap: (store: QueueStore) => QueueStore,
): Promise<Gateway> {
  const held = await openDataFolder(config, opts);
  try {
    return new Gateway(config, { ...opts, lock: held.lock, store: wrap(held.store) });
  } catch (err) {
    await held.store.close();
    held.lock.release();
    throw err;
  }
}

export interface TestDaemon {
  emu: TestEmulator;
  dir: string;
  configFile: string;
  /** The config as written to the file (edit it with `rewrite`). */
  raw: Sections;
  child: ChildProcess;
  out: OutputWatch;
  err: OutputWatch;
  /** Every daemon's stdout on this folder, restarts included. */
  outputs: OutputWatch[];
  /** The listeners from the STARTED line of the daemon now running. */
  addresses: { smtp: Array<{ port: number }>; admin: { port: number } | null; web?: { port: number } | null };
  /** Writes the config `change` makes of the raw one (for the next start or a SIGHUP). */
  rewrite(change: (raw: Sections) => Sections): void;
  /** Ends the running daemon with `signal` and waits for its exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts a new daemon on the same folder and config (after kill); resolves once it logged STARTED. */
  restart(): Promise<void>;
  /** Kills the daemon (SIGTERM unless said), then ends the emulator and removes the folder. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** A daemon process started by `launchDaemon`, and the listeners from its STARTED line. */
export interface LaunchedDaemon {
  child: ChildProcess;
  out: OutputWatch;
  err: OutputWatch;
  addresses: TestDaemon["addresses"];
}

/**
 * The one way a test starts the daemon process: `faxgate start --config FILE` in `cwd`; resolves
 * once it logged STARTED (json, info), fails with its output if it exits first.
 */
export async function launchDaemon(configFile: string, cwd: string): Promise<LaunchedDaemon> {
  const child = spawnCli(["start", "--config", configFile], { cwd });
  const out = new OutputWatch(child.stdout!);
  const err = new OutputWatch(child.stderr!);
  const started = await Promise.race([
    out.waitFor(/^.*"msg":"STARTED".*$/m, 60_000),
    new Promise<never>((_, reject) =>
      child.once("exit", (code) =>
        reject(new Error(`daemon exited with ${code}: ${err.text.slice(-2000)}${out.text.slice(-2000)}`)),
      ),
    ),
  ]);
  return { child, out, err, addresses: JSON.parse(started[0]) as TestDaemon["addresses"] };
}

/**
 * The daemon as an admin runs it: the config written to `<dir>/faxgate.yaml` (JSON, which YAML
 * reads), `faxgate start --config` as a child; resolves once it logged STARTED (json, info).
 */
export async function startDaemon(spec: GatewaySpec): Promise<TestDaemon> {
  const d = await prepareDaemon(spec);
  try {
    await d.restart();
  } catch (err) {
    await d.stop("SIGKILL");
    throw err;
  }
  return d;
}

/**
 * What `startDaemon` makes, before the first start: folder, emulator and config file are there,
 * no daemon runs until `restart()` (a suite that mounts a file system on the data folder, or
 * starts and kills the daemon many times, starts it itself).
 */
export async function prepareDaemon(spec: GatewaySpec): Promise<TestDaemon> {
  const { dir, emu, raw: made } = await prepareGateway(spec);
  const configFile = path.join(dir, "faxgate.yaml");
  let raw = mergeSections({ log: { level: "info", format: "json" } }, made);
  const write = () => writeFileSync(configFile, JSON.stringify(raw, null, 2));
  write();
  const outputs: OutputWatch[] = [];
  const d: TestDaemon = {
    emu,
    dir,
    configFile,
    raw,
    child: null as unknown as ChildProcess,
    out: null as unknown as OutputWatch,
    err: null as unknown as OutputWatch,
    outputs,
    addresses: { smtp: [], admin: null },
    rewrite(change) {
      raw = change(raw);
      d.raw = raw;
      write();
    },
    kill: (signal = "SIGKILL") => endChild(d.child, signal),
    async restart() {
      const launched = await launchDaemon(configFile, dir);
      outputs.push(launched.out);
      Object.assign(d, launched);
    },
    async stop(signal = "SIGTERM") {
      if (d.child) await endChild(d.child, signal);
      await emu.stop();
      removeFolder(dir);
    },
  };
  return d;
}

export function endChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}

/**
 * What both doors begin with, as the composition root's factories make it: the test's folder and
 * emulator, the config, the data folder opened (its queue wrapped when the test asks) and the
 * core. `parts` is the door's list to push to and start; stop() stops what was started, then the
 * emulator and folder, and is called here when the opening itself fails.
 */
async function openDoor(
  spec: GatewaySpec & { logger?: Logger; clock?: Clock; wrapStore?: (s: QueueStore) => QueueStore },
) {
  const { dir, emu, raw } = await prepareGateway(spec);
  const parts: Part[] = [];
  const logger = spec.logger ?? createLogger({ level: "fatal" });
  const clock = spec.clock ?? systemClock;
  let started = false;
  const stop = async () => {
    if (started) await stopParts(parts, { timeoutMs: 5000, now: () => clock.now(), logger });
    await emu.stop();
    removeFolder(dir);
  };
  try {
    const config = validateConfig(raw, "test config");
    const held = await openDataFolder(config, { logger, clock });
    const store = spec.wrapStore ? spec.wrapStore(held.store) : held.store;
    parts.push(...dataFolderParts({ ...held, store }, logger));
    started = true;
    const core = createCore({ config, service: serviceOf(config), store, clock, logger, metrics: new Metrics() });
    parts.push(ledgerSealPart(core.ledger), core.api.part);
    return { dir, emu, config, logger, core, parts, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Hooks of `startMailDoor` a test may set besides the config. */
export interface MailDoorSpec extends GatewaySpec {
  /** The gateway's logger (default: silent). */
  logger?: Logger;
  clock?: Clock;
  /** As `GatewayInProcessSpec.wrapStore`: every part gets the wrapped queue. */
  wrapStore?: (store: QueueStore) => QueueStore;
  /** The reader threads' options (a short mail time limit), instead of the config's pool. */
  readers?: ReaderPoolOptions;
  /** An office converter the test owns (shared by its tests, or one that fails), instead of the config's. */
  office?: OfficeConverter;
}

export interface TestMailDoor {
  emu: TestEmulator;
  dir: string;
  config: Config;
  /** The parts as the composition root shares them (store, live settings, metrics, refusals). */
  core: Core;
  smtp: SmtpGateway;
  smtpPort: number;
  /** Replaces the users as a reload does: the receiver reads them from the next MAIL FROM. */
  setUsers(users: Config["users"]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The mail door alone, built by the composition root's own factories (src/parts: core, converters,
 * mail door, SMTP receiver) on the one test config: no dispatcher, so what mail queued stays
 * queued for the test to look at; stop() ends it, its emulator and folder.
 */
export async function startMailDoor(spec: MailDoorSpec): Promise<TestMailDoor> {
  const { dir, emu, config, logger, core, parts, stop } = await openDoor(spec);
  try {
    const made = createConverters(core);
    let conv = made;
    if (spec.readers || spec.office) {
      // the config's readers give way only to the test's own; with just an office they stay
      if (spec.readers) await made.readers.close();
      const readers = spec.readers ? new ReaderPool({ ...spec.readers }) : made.readers;
      const office = spec.office ?? made.office;
      const convertQueue = new ConvertQueue(office, { perUser: config.office.queuePerUser, logger });
      conv = { readers, office, convertQueue, parts: [] };
      conv.parts.push({ name: "readers", stop: () => readers.close() });
      // an office converter the test gave is the test's to close; the config's is closed here
      conv.parts.push({
        name: "office",
        stop: async () => {
          await convertQueue.close();
          if (!spec.office) await office.close();
        },
      });
      if (spec.office) await made.office.close();
    }
    parts.push(...conv.parts);
    const door = createMailDoor(core, conv);
    parts.push(door.part);
    const receiver = createSmtp(core, door.mail);
    if (!receiver.smtp) throw new Error("startMailDoor needs an smtp section");
    parts.push(receiver.part);
    await startParts(parts);
    return {
      emu,
      dir,
      config,
      core,
      smtp: receiver.smtp,
      smtpPort: core.addresses.smtp[0]?.port ?? 0,
      setUsers: (users) => core.live.reload({ ...core.live.config(), users }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Hooks of `startSpoolDoor` a test may set besides the config (which must have a `spool` section). */
export interface SpoolDoorSpec extends GatewaySpec {
  /** The gateway's logger (default: silent). */
  logger?: Logger;
  clock?: Clock;
  /** Reader threads the test owns (one pool for a file's tests), instead of the config's; not closed here. */
  readerPool?: ReaderPool;
  /** An office converter the test owns (one that cannot convert), instead of the config's; not closed here. */
  office?: OfficeConverter;
  /** The fax client each user's print files get, instead of the gateway's (a service unreachable once). */
  clientFor?: (user: string) => FaxApi;
  /** Who has left the directory, by name, as the directory's sync tells the live settings. */
  left?: string[];
  /** The watcher's intervals, file calls and concurrency (createSpool's tuning); the hooks are the door's. */
  tuning?: Omit<SpoolTuning, "onSweep" | "onRescan">;
  /** false: every part is started but the watcher; the test starts it (`watcher.start()`). */
  start?: boolean;
}

export interface TestSpoolDoor {
  emu: TestEmulator;
  dir: string;
  config: Config;
  /** The parts as the composition root shares them (store, live settings, metrics, refusals). */
  core: Core;
  /** The watcher now in use: `restart()` replaces it. */
  watcher: SpoolWatcher;
  /** A user's folder (default: the config's first user). */
  folder(user?: Pick<UserConfig, "name" | "spool">): string;
  /** Resolves after `n` more complete rescans of the user's folder (every name in it was looked at). */
  rescans(n: number, user?: string): Promise<void>;
  /** Resolves after `n` more complete sweeps (failed jobs, done/ pruning, orphan tickets). */
  sweeps(n: number): Promise<void>;
  /** A fresh watcher on the same folders and store, as after a restart of the daemon. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The print folders alone, built by the composition root's own factories (src/parts: core,
 * converters, spool) on the one test config: no dispatcher, so what the folders queued stays
 * queued for the test to look at; stop() ends it, its emulator and folder.
 */
export async function startSpoolDoor(spec: SpoolDoorSpec): Promise<TestSpoolDoor> {
  const opened = await openDoor(spec);
  const { dir, emu, config, logger, core, parts } = opened;
  let watcher: SpoolWatcher | null = null;
  const stop = async () => {
    await watcher?.stop();
    await opened.stop();
  };
  try {
    const spool = config.spool;
    if (!spool) throw new Error("startSpoolDoor needs a spool section");
    if (spec.left) {
      const left = new Set(spec.left);
      core.live.leaversFrom(
        (login) => (left.has(login) ? login : null),
        () => [...left],
      );
    }
    const made = createConverters(core);
    // the config's readers start no thread until used, and its converter nothing until asked
    parts.push(...made.parts);
    const convertQueue = spec.office
      ? new ConvertQueue(spec.office, { perUser: config.office.queuePerUser, logger })
      : made.convertQueue;
    if (spec.office) parts.push({ name: "test office queue", stop: () => convertQueue.close() });
    const conv = {
      readers: spec.readerPool ?? made.readers,
      office: spec.office ?? made.office,
      convertQueue,
      parts: [],
    };
    const clientFor = spec.clientFor;
    // only the API clients' clientFor is the test's; the rest is the gateway's
    const spoolCore: Core = clientFor
      ? { ...core, api: Object.create(core.api, { clientFor: { value: (user: string) => clientFor(user) } }) }
      : core;
    const events = new EventEmitter();
    const tuning: SpoolTuning = {
      ...spec.tuning,
      onSweep: () => events.emit("sweep"),
      onRescan: (user) => events.emit(`rescan:${user}`),
    };
    const first = createSpool(spoolCore, conv, tuning);
    // the watcher is started and stopped here, so that a restart can replace it
    parts.push(...first.parts.filter((p) => p.name !== "spool"));
    watcher = first.watcher!;
    await startParts(parts);
    if (spec.start !== false) await watcher.start();
    const count = (event: string, n: number): Promise<void> =>
      new Promise((resolve, reject) => {
        let left = n;
        const timer = setTimeout(() => {
          events.off(event, on);
          reject(new Error(`timed out waiting for ${n} ${event} events`));
        }, 20_000);
        const on = () => {
          if (--left > 0) return;
          clearTimeout(timer);
          events.off(event, on);
          resolve();
        };
        events.on(event, on);
      });
    const firstUser = config.users[0];
    const door: TestSpoolDoor = {
      emu,
      dir,
      config,
      core,
      watcher,
      folder: (user = firstUser!) => path.join(spool.root, user.spool ?? user.name),
      rescans: (n, user = firstUser!.name) => count(`rescan:${user}`, n),
      sweeps: (n) => count("sweep", n),
      async restart() {
        await door.watcher.stop();
        // a new watcher as createSpool makes it at a start; the first one's parts go on as they were
        watcher = createSpool(spoolCore, conv, tuning).watcher!;
        door.watcher = watcher;
        await watcher.start();
      },
      stop,
    };
    return door;
  } catch (err) {
    await stop();
    throw err;
  }
}
