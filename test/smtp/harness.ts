// A real SmtpGateway on a loopback port 0 with a real Store in a temp folder and the test
// emulator behind it for contacts and preferences; nodemailer as the client.
import { testLedger } from "../helpers/ledger.js";
import { localCounters } from "../../src/fleet-counter.js";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import nodemailer from "nodemailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport/index.js";
import {
  configSchema,
  preferenceRefreshMs,
  type DnsConfig,
  type PartialMode,
  type SmtpConfig,
  type UserConfig,
} from "../../src/config/schema.js";
import type { DestinationCheck } from "../../src/recipients/destination-policy.js";
import { UserDirectory } from "../../src/fax/user-directory.js";
import type { OfficeConverter } from "../../src/intake/office/office-convert.js";
import { systemClock } from "../../src/clock.js";
import { silentLogger, type Logger } from "../../src/log/logger.js";
import { Metrics } from "../../src/metrics/metrics.js";
import { SmtpGateway } from "../../src/smtp/server.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { ReaderPool, type ReaderPoolOptions } from "../../src/intake/reader-pool.js";
import { clientFor, closeClients } from "../helpers/client.js";
import { testMailDoor, testOffice, testPolicy, testResolver } from "../helpers/collaborators.js";
import { TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";

export const DOMAIN = "fax.example.com";

export const USERS: UserConfig[] = [
  { name: "alice", email: "alice@example.com", aliases: ["Alice.Archer@Example.org"], apiKey: TEST_KEYS.alice },
  { name: "bob", email: "bob@example.com", aliases: [], apiKey: TEST_KEYS.bob },
];

export function smtpConfig(over: Partial<SmtpConfig> = {}): SmtpConfig {
  const base = configSchema.parse({ smtp: { listen: ["127.0.0.1:0"], domains: [DOMAIN] } }).smtp!;
  // a short pause after a failed AUTH: tests log in wrongly on purpose
  return { ...base, maxMessagesPerMinute: 10_000, authFailureDelay: 20, ...over };
}

export interface Rig {
  gateway: SmtpGateway;
  port: number;
  store: SqliteStore;
  metrics: Metrics;
  dir: string;
  dataDir: string;
  /** Replaces the users, as a reload does: the gateway reads them from the next MAIL FROM. */
  setUsers(users: UserConfig[]): void;
  close(): Promise<void>;
}

export async function startRig(
  emu: TestEmulator | null,
  opts: {
    smtp?: Partial<SmtpConfig>;
    users?: UserConfig[];
    wrapStore?: (s: SqliteStore) => QueueStore;
    readers?: ReaderPoolOptions;
    logger?: Logger;
    destinations?: DestinationCheck;
    office?: OfficeConverter;
    dns?: Partial<DnsConfig>;
    partial?: PartialMode;
  } = {},
): Promise<Rig> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-"));
  const dataDir = path.join(dir, "data");
  const store = SqliteStore.open({ dataDir });
  const keys = new Map((opts.users ?? USERS).map((u) => [u.name, u.apiKey]));
  const cf = (user: string) => {
    if (!emu) throw new Error("no emulator in this test");
    return clientFor(emu, keys.get(user)!);
  };
  const metrics = new Metrics();
  // mail is parsed on worker threads, as in the daemon
  const readers = new ReaderPool({ threads: 1, ...opts.readers });
  let users = opts.users ?? USERS;
  const smtp = smtpConfig(opts.smtp);
  const logger = opts.logger ?? silentLogger();
  // a test that names no converter gets LibreOffice from PATH, as a daemon without office settings
  const office = opts.office ?? testOffice();
  const mail = await testMailDoor({
    dataDir,
    store: opts.wrapStore ? opts.wrapStore(store) : store,
    directory: new UserDirectory({ clientFor: cf, refreshMs: preferenceRefreshMs(configSchema.parse({})) }),
    readers,
    office,
    logger,
    metrics,
    clock: systemClock,
    smtp,
    partial: opts.partial,
  });
  const gateway = new SmtpGateway({
    smtp,
    users: () => users,
    mail,
    ledger: testLedger(store),
    clientFor: cf,
    logger,
    clock: systemClock,
    metrics,
    destinations: opts.destinations ?? testPolicy(() => users),
    resolve: testResolver(opts.dns),
    counters: localCounters,
  });
  const [addr] = await gateway.listen();
  return {
    gateway,
    port: addr!.port,
    store,
    metrics,
    dir,
    dataDir,
    setUsers: (next) => {
      users = next;
    },
    async close() {
      await gateway.close({ timeoutMs: 500 });
      if (!opts.office) await office.close();
      await readers.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` with a fresh rig, and closes the rig whatever happens. */
export async function withRig<T>(
  emu: TestEmulator | null,
  opts: Parameters<typeof startRig>[1],
  fn: (rig: Rig) => Promise<T>,
): Promise<T> {
  const rig = await startRig(emu, opts);
  try {
    return await fn(rig);
  } finally {
    await rig.close();
  }
}

export async function stopEmulator(emu: TestEmulator | undefined): Promise<void> {
  if (!emu) return;
  await closeClients(emu);
  await emu.stop();
}

export function transport(port: number, extra: Partial<SMTPTransport.Options> = {}) {
  return nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    secure: false,
    ignoreTLS: true,
    ...extra,
  } as SMTPTransport.Options);
}

/** The job id in "250 2.0.0 queued as <id>". */
export function jobIdOf(response: string): string {
  const m = /queued as (\S+)/.exec(response);
  if (!m) throw new Error(`no job id in ${JSON.stringify(response)}`);
  return m[1]!;
}

/** A small but real PDF. */
export const PDF = Buffer.from(
  "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
);

/** A command run to its end: stdout and stderr, rejecting on a non-zero exit (swaks sessions). */
export const runCommand = promisify(execFile);

/** Whether swaks is installed here; when not, says so once for `who`, whose swaks sessions skip. */
export async function haveSwaks(who: string): Promise<boolean> {
  const has = await runCommand("swaks", ["--version"]).then(
    () => true,
    () => false,
  );
  if (!has) console.warn(`${who}: swaks is not installed; its sessions skip (apt-get install swaks)`);
  return has;
}
