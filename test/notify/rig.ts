// The real parts around the notifier for one test: the emulator over HTTPS, a Store in a temp
// folder, the real FaxClient and Dispatcher to produce final jobs, the UserDirectory, an SMTP
// sink as the smarthost, and a clock that is real time plus an offset the test can push forward
// (so deferred notifications become due without waiting).
import { rm } from "node:fs/promises";
import path from "node:path";
import { addressWaitMs, type NotifyConfig, smtpSettings, type UserConfig } from "../../src/config/schema.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import type { FaxApi } from "../../src/fax/types.js";
import { UserDirectory } from "../../src/fax/user-directory.js";
import { createLogger, type Logger } from "../../src/log/logger.js";
import { Metrics } from "../../src/metrics/metrics.js";
import { InboundPoller, type InboundPollerOptions } from "../../src/inbound/poller.js";
import type { ReceivedFaxIntake, ReceivedIntakeOptions } from "../../src/inbound/received-intake.js";
import { Notifier, type NotifierOptions } from "../../src/notify/notifier.js";
import { createTransport } from "../../src/notify/transport.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import type { Job, NewJob } from "../../src/store/types.js";
import { clientFor as testClient, closeClients, emulatorCall } from "../helpers/client.js";
import { emulatorInbound, startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { docFile } from "../helpers/store.js";
import { SmtpSink } from "./smtp-sink.js";
import { waitUntil } from "../helpers/wait.js";
import { testLedger } from "../helpers/ledger.js";
import { defaultConfig, testDispatcher, testIntake } from "../helpers/collaborators.js";
import { tempFolder } from "../tmp-dir.js";

export const USERS: UserConfig[] = [
  { name: "alice", email: "alice@example.com", aliases: [], apiKey: TEST_KEYS.alice },
  { name: "bob", email: "bob@example.com", aliases: [], apiKey: TEST_KEYS.bob },
];

export interface RigOptions {
  /** UserDirectory refresh (default: a long time, preferences read once) */
  refreshMs?: number;
  adminCopy?: string;
  mailBacklog?: boolean;
}

export class Rig {
  readonly logs: Array<Record<string, unknown>> = [];
  readonly logger: Logger;
  readonly metrics = new Metrics();
  offset = 0;
  readonly clock = { now: () => Date.now() + this.offset };
  store!: SqliteStore;
  emu!: TestEmulator;
  sink!: SmtpSink;
  dir!: string;
  directory!: UserDirectory;
  dispatcher!: Dispatcher;
  private readonly opened: Array<{ stop(): Promise<void> }> = [];
  private readonly stores: SqliteStore[] = [];

  constructor(private readonly opts: RigOptions = {}) {
    this.logger = createLogger({
      level: "debug",
      destination: { write: (line: string) => void this.logs.push(JSON.parse(line)) },
    });
  }

  async start(): Promise<this> {
    this.dir = tempFolder("test");
    this.emu = await startTestEmulator({ delayMs: 50 });
    this.sink = await new SmtpSink().start();
    this.store = this.openStore();
    this.directory = new UserDirectory({
      clientFor: this.clientFor,
      refreshMs: this.opts.refreshMs ?? 3_600_000,
      clock: this.clock,
    });
    this.dispatcher = testDispatcher({
      store: this.store,
      clientFor: this.clientFor,
      api: { baseUrl: this.emu.baseUrl, concurrency: 8, ratePerSecond: 1000 },
      // one try per number: a busy line fails the recipient at once
      queue: {
        retrySchedule: [50],
        maxFaxTries: 1,
        pollInterval: 100,
        reconcileGrace: 100,
        lease: 5000,
      },
      logger: this.logger.child({ component: "dispatch" }),
      clock: this.clock,
    });
    return this;
  }

  /** Another Store on the same database (a restarted gateway). */
  openStore(): SqliteStore {
    const s = SqliteStore.open({ dataDir: path.join(this.dir, "data"), clock: this.clock });
    this.stores.push(s);
    return s;
  }

  readonly clientFor = (user: string): FaxApi => {
    const u = USERS.find((x) => x.name === user);
    if (!u) throw new Error(`no user ${user}`);
    return testClient(this.emu, u.apiKey);
  };

  notifyConfig(over: Partial<NotifyConfig> = {}): NotifyConfig {
    return {
      from: "faxgate@gateway.example",
      transport: this.sink.url,
      preferenceRefresh: this.opts.refreshMs ?? 3_600_000,
      attachments: "service",
      report: "off",
      inbound: { enabled: true, interval: 60_000, mailBacklog: this.opts.mailBacklog ?? false },
      ...(this.opts.adminCopy ? { adminCopy: this.opts.adminCopy } : {}),
      ...over,
    };
  }

  notifier(over: Partial<NotifierOptions> = {}, store = this.store): Notifier {
    const n = new Notifier({
      notify: this.notifyConfig(),
      users: () => USERS,
      store,
      clientFor: this.clientFor,
      directory: this.directory,
      dataDir: path.join(this.dir, "data"),
      logger: this.logger.child({ component: "notify" }),
      clock: this.clock,
      metrics: this.metrics,
      addressWaitMs: addressWaitMs(defaultConfig()),
      confirmWaitMs: smtpSettings(defaultConfig()).senderAuth.confirmWait,
      ledger: testLedger(store),
      ...over,
    });
    this.opened.push(n);
    return n;
  }

  /**
   * The one door for received faxes on `store`, as the daemon builds it: kept once, attributed by
   * the service's record, routed by the default route (the receiving user's mail) unless `over`
   * gives rules.
   */
  intake(store: QueueStore = this.store, over: Partial<ReceivedIntakeOptions> = {}): ReceivedFaxIntake {
    return testIntake({
      store,
      clientFor: this.clientFor,
      users: () => USERS,
      me: (user) => this.directory.get(user),
      dataDir: path.join(this.dir, "data"),
      logger: this.logger.child({ component: "inbound" }),
      clock: this.clock,
      ...over,
    });
  }

  /** The inbound poller as the daemon builds it: handing what it finds to the intake on `store`. */
  poller(store: QueueStore = this.store, over: Partial<InboundPollerOptions> = {}): InboundPoller {
    const p = new InboundPoller({
      notify: this.notifyConfig(),
      users: () => USERS,
      store,
      clientFor: this.clientFor,
      logger: this.logger.child({ component: "inbound" }),
      clock: this.clock,
      ...over,
      intake: over.intake ?? this.intake(store, over.clientFor ? { clientFor: over.clientFor } : {}),
    });
    this.opened.push(p);
    return p;
  }

  /** A transport to the sink that a test can hand to a Notifier. */
  smtpTransport() {
    return createTransport(this.sink.url, this.logger);
  }

  /** Enqueues a fax and runs the real dispatcher against the emulator until the job is final. */
  async finalJob(user: string, numbers: string[], over: Partial<NewJob> = {}): Promise<Job> {
    const { job } = await this.store.enqueue({
      source: "smtp",
      user,
      recipients: numbers.map((number) => ({ number })),
      documents: [{ path: docFile(this.dir), name: "letter.pdf", contentType: "application/pdf" }],
      cover: { enabled: false },
      ...over,
    });
    let states = "";
    return waitUntil(
      async () => {
        await this.dispatcher.runOnce();
        const now = (await this.store.getJob(job.id))!;
        states = JSON.stringify(now.recipients.map((r) => r.state));
        return ["delivered", "failed", "partial", "cancelled"].includes(now.state) ? now : null;
      },
      "the job to finish",
      20_000,
      40,
    ).catch(() => {
      throw new Error(`job did not finish: ${states}`);
    });
  }

  /** Changes a user's preferences on the service, as they would in its web application. */
  setPreferences(email: string, prefs: Record<string, unknown>): Promise<unknown> {
    return emulatorCall(this.emu, "PATCH", `/_emulator/users/${encodeURIComponent(email)}`, prefs);
  }

  /** A fax arriving for a user on the service; returns its messageId. */
  async inbound(email: string, callerId: string, pdf: Uint8Array, csid = "REMOTE CSID"): Promise<string> {
    return emulatorInbound(this.emu, { email, callerId, csid }, pdf, "scan.pdf");
  }

  /** Every log line as text, to look for secrets. */
  logText(): string {
    return this.logs.map((l) => JSON.stringify(l)).join("\n");
  }

  async stop(): Promise<void> {
    for (const o of this.opened) await o.stop().catch(() => {});
    await this.dispatcher?.stop().catch(() => {});
    for (const s of this.stores) s.close();
    await this.sink?.stop();
    if (this.emu) {
      await closeClients(this.emu);
      await this.emu.stop();
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}
