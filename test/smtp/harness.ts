// The SMTP suite's rig: the mail door from the one builder (startMailDoor: the receiver, intake
// and queue as the composition root wires them) with this suite's users and SMTP settings, and
// the helpers its files share (nodemailer transport, job ids, swaks).
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import nodemailer from "nodemailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport/index.js";
import { hashPassword } from "../../src/auth/password.js";
import type { DnsConfig, PartialMode, SmtpConfig, UserConfig } from "../../src/config/schema.js";
import type { OfficeConverter } from "../../src/intake/office/office-convert.js";
import type { ReaderPoolOptions } from "../../src/intake/reader-pool.js";
import type { Logger } from "../../src/log/logger.js";
import type { Metrics } from "../../src/metrics/metrics.js";
import type { SmtpGateway } from "../../src/smtp/server.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { closeClients } from "../helpers/client.js";
import { TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { mergeSections, type Sections, startMailDoor, type TestMailDoor } from "../helpers/gateway.js";

export const DOMAIN = "fax.example.com";

export const USERS: UserConfig[] = [
  { name: "alice", email: "alice@example.com", aliases: ["Alice.Archer@Example.org"], apiKey: TEST_KEYS.alice },
  { name: "bob", email: "bob@example.com", aliases: [], apiKey: TEST_KEYS.bob },
];

/** The SMTP section the rig's gateways start from (as a config file holds it); `over` replaces keys of it. */
export function smtpSection(over: Partial<SmtpConfig> = {}): Sections {
  // a short pause after a failed AUTH: tests log in wrongly on purpose
  return asWritten({
    listen: ["127.0.0.1:0"],
    domains: [DOMAIN],
    maxMessagesPerMinute: 10_000,
    authFailureDelay: 20,
    ...over,
  });
}

/** Keys the schema reads with `duration()`: a file gives them as text ("300ms"), the parsed config as ms. */
const DURATIONS = new Set([
  "authFailureDelay",
  "confirmWait",
  "greetingDelay",
  "idleSessionTimeout",
  "sessionLifetime",
  "socketTimeout",
  "timeout",
]);

/** A section in the parsed form (durations in ms, as the suite's tests write them) back in a file's form. */
function asWritten(section: object): Sections {
  return Object.fromEntries(
    Object.entries(section).map(([k, v]) => [
      k,
      DURATIONS.has(k) && typeof v === "number"
        ? `${v}ms`
        : v && typeof v === "object" && !Array.isArray(v)
          ? asWritten(v)
          : v,
    ]),
  );
}

export interface Rig {
  /** The mail door as the one builder makes it (test/helpers/gateway.ts: startMailDoor). */
  door: TestMailDoor;
  gateway: SmtpGateway;
  port: number;
  store: QueueStore;
  metrics: Metrics;
  dir: string;
  dataDir: string;
  /** Replaces the users, as a reload does: the gateway reads them from the next MAIL FROM. */
  setUsers(users: UserConfig[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * A mail door (SMTP receiver, mail intake, queue) from the one builder, with the SMTP suite's
 * users and SMTP settings, talking to the file's emulator `emu` (or, when null, one of its own).
 */
export async function startRig(
  emu: TestEmulator | null,
  opts: {
    smtp?: Partial<SmtpConfig>;
    users?: UserConfig[];
    wrapStore?: (s: QueueStore) => QueueStore;
    readers?: ReaderPoolOptions;
    logger?: Logger;
    office?: OfficeConverter;
    dns?: Partial<DnsConfig>;
    partial?: PartialMode;
    /** Sections over the rig's config (destinations, intake...). */
    config?: Sections;
  } = {},
): Promise<Rig> {
  const door = await startMailDoor({
    name: "smtp",
    sharedEmulator: emu ?? undefined,
    logger: opts.logger,
    wrapStore: opts.wrapStore,
    readers: opts.readers,
    office: opts.office,
    config: mergeSections(
      {
        smtp: smtpSection(opts.smtp),
        users: opts.users ?? USERS,
        ...(opts.dns ? { dns: asWritten(opts.dns) } : {}),
        ...(opts.partial ? { intake: { partial: opts.partial } } : {}),
      },
      opts.config ?? {},
    ),
  });
  const dataDir = door.config.data;
  return {
    door,
    gateway: door.smtp,
    port: door.smtpPort,
    store: door.core.store,
    metrics: door.core.metrics,
    dir: door.dir,
    dataDir,
    setUsers: (users) => door.setUsers(users),
    close: () => door.stop(),
  };
}

/**
 * `users` each with a password (`<name>-secret` where none was set): a gateway with smtp.auth
 * "required" refuses to start with a user who could never sign in.
 */
export async function withPasswords(users: UserConfig[] = USERS): Promise<UserConfig[]> {
  return Promise.all(
    users.map(async (u) => (u.password ? u : { ...u, password: await hashPassword(`${u.name}-secret`) })),
  );
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
