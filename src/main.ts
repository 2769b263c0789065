// The one place that wires objects together: config -> store -> API clients -> dispatcher,
// notifier, spool, SMTP -> admin. Start order is inside-out (the queue exists before anything
// can put work in it); shutdown is outside-in (stop accepting, then drain, then close the store).
import { mkdirSync } from "node:fs";
import os from "node:os";
import { HealthChecks } from "./admin/health.js";
import { AdminServer } from "./admin/server.js";
import { systemClock, type Clock } from "./clock.js";
import { outboxDir } from "./config/load.js";
import { riskySettings } from "./config/risky-settings.js";
import type { Config, UserConfig } from "./config/schema.js";
import { Dispatcher } from "./dispatch/dispatcher.js";
import { DaemonLock } from "./store/daemon-lock.js";
import { describeError, FaxgateError, isFaxgateError } from "./errors.js";
import { FaxClientFactory } from "./fax/client-factory.js";
import type { FaxApi, FaxRecord } from "./fax/types.js";
import { ApiGate, type GateClass } from "./fax/api-gate.js";
import { ContactCache } from "./fax/contact-cache.js";
import { UserShare } from "./fax/user-share.js";
import { ConvertQueue } from "./intake/convert-queue.js";
import { UserDirectory } from "./fax/user-directory.js";
import type { Logger } from "./log/logger.js";
import { registerQueueGauges } from "./metrics/gauges.js";
import { apiObserver, Metrics } from "./metrics/metrics.js";
import { InboundPoller } from "./notify/inbound.js";
import { Notifier } from "./notify/notifier.js";
import { SmtpGateway } from "./smtp/server.js";
import { AddressExpiry } from "./spool/address-expiry.js";
import { SpoolWatcher } from "./spool/watcher.js";
import type { QueueStore } from "./store/queue-store.js";
import { openLocalStore, openStore } from "./store/open.js";
import { KeyWatch } from "./keys/key-watch.js";
import { ReaderPool } from "./workers/pool.js";
import { OfficeConverter } from "./intake/office-convert.js";
import { effectiveUsers } from "./keys/key-overrides.js";
import { destinationCheckFor } from "./intake/destination-policy.js";
import { readReceiverTls, WebhookReceiver } from "./webhooks/receiver.js";
import { InboxEscalation } from "./inbound/escalation.js";
import { ReceivedFaxIntake } from "./inbound/received-intake.js";
import { descriptorBudget, type DescriptorBudget } from "./listener-limits.js";
import { OperatorPages } from "./web/operator.js";
import { RefusalLog } from "./web/refusals.js";
import { WebConsole } from "./web/server.js";
import { MailboxIntake } from "./mailbox/mailbox-intake.js";
import { mailboxDoor } from "./mailbox/accept-message.js";
import path from "node:path";

export interface ServiceEndpoint {
  baseUrl: string;
  caFile?: string;
  adminKey?: string;
}

export interface GatewayOptions {
  /** Where the fax service is; in sandbox mode the embedded emulator's address. */
  service: ServiceEndpoint;
  logger: Logger;
  clock?: Clock;
  /** Called on SIGHUP to get a fresh config (users and their preferences are reloaded). */
  reloadConfig?: () => Config;
  /** The data folder's lock when the caller took it already (before starting a sandbox); released at stop. */
  lock?: DaemonLock;
  /** web console: pause after a wrong password, times the failures (default 1000 ms; tests shorten it) */
  webAuthFailureDelayMs?: number;
  /** The queue, when the caller opened it already (`Gateway.open` does, with `openStore`). */
  store?: QueueStore;
}

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

export class Gateway {
  readonly metrics = new Metrics({ defaultMetrics: true });
  readonly store: QueueStore;
  private readonly lock: DaemonLock;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly fax: FaxClientFactory;
  /** Clients by gate class and user; each user's contact cache is shared by all their clients. */
  private readonly clients = new Map<string, FaxApi>();
  private readonly contactCaches = new Map<string, ContactCache>();
  /** Each console user's share of the API calls (web.apiCallsPerMinute, web.apiCallsAtOnce). */
  private readonly consoleShare: UserShare;
  /** Every API call of this process, contact lookups included, passes this one gate (rate, history budget). */
  private readonly gate: ApiGate;
  private users: UserConfig[];
  private readonly directory: UserDirectory;
  private readonly dispatcher: Dispatcher;
  private readonly notifier: Notifier | null;
  private readonly inbound: InboundPoller | null;
  readonly received: ReceivedFaxIntake;
  readonly escalation: InboxEscalation;
  private readonly spool: SpoolWatcher | null;
  /** Ends print jobs that waited too long for their owner's number (public for tests with a manual clock). */
  readonly addressExpiry: AddressExpiry | null;
  private readonly smtp: SmtpGateway | null;
  private readonly admin: AdminServer | null;
  private readonly keyWatch: KeyWatch | null;
  readonly webhooks: WebhookReceiver | null;
  private readonly web: WebConsole | null;
  /** One watcher per configured mailbox (imap.mailboxes). */
  private readonly mailboxes: MailboxIntake[];
  private readonly budget: DescriptorBudget;
  /** Recent SMTP and spool refusals, for the console's operator page. */
  readonly refusals: RefusalLog;
  /** MIME parsing and PDF text on worker threads (started with the first mail or PDF). */
  private readonly readers = new ReaderPool();
  /** Office documents to PDF, shared by mail and the print folders (one concurrency limit). */
  private readonly office: OfficeConverter;
  /** Conversions in turn per user, in front of `office` (src/intake/convert-queue.ts). */
  private readonly convertQueue: ConvertQueue;
  private addresses: RunningAddresses = { smtp: [], admin: null, spoolRoot: null, outbox: null };
  private readonly health: HealthChecks;
  private stopping: Promise<void> | null = null;

  /** Takes the data folder's lock, opens the queue the config names (openStore), then wires the rest. */
  static async open(config: Config, opts: GatewayOptions): Promise<Gateway> {
    mkdirSync(config.data, { recursive: true, mode: 0o750 });
    const lock = opts.lock ?? DaemonLock.acquire(config.data);
    let store: QueueStore | undefined;
    try {
      store =
        opts.store ??
        (await openStore({
          dataDir: config.data,
          database: config.database,
          clock: opts.clock,
          logger: opts.logger.child({ component: "store" }),
          daemon: true,
        }));
      return new Gateway(config, { ...opts, lock, store });
    } catch (err) {
      if (store && !opts.store) await store.close().catch(() => undefined);
      if (!opts.lock) lock.release();
      throw err;
    }
  }

  constructor(
    private config: Config,
    private readonly opts: GatewayOptions,
  ) {
    this.log = opts.logger;
    this.clock = opts.clock ?? systemClock;
    mkdirSync(config.data, { recursive: true, mode: 0o750 });
    this.lock = opts.lock ?? DaemonLock.acquire(config.data);
    try {
      if (config.database && !opts.store)
        throw new FaxgateError(
          "INTERNAL",
          "a PostgreSQL queue (database:) is opened by Gateway.open, not by the constructor",
        );
      this.store =
        opts.store ??
        openLocalStore({
          dataDir: config.data,
          clock: this.clock,
          logger: this.log.child({ component: "store" }),
          daemon: true,
        });
    } catch (err) {
      this.lock.release();
      throw err;
    }
    this.users = effectiveUsers(config.users, config.data);
    this.gate = new ApiGate({
      ratePerSecond: config.api.ratePerSecond,
      concurrency: config.api.concurrency,
      dispatchShare: config.api.dispatchShare,
      historyPerMinute: config.api.historyPerMinute,
    });
    this.consoleShare = new UserShare({
      perMinute: config.web?.apiCallsPerMinute ?? 60,
      atOnce: config.web?.apiCallsAtOnce ?? 2,
      clock: this.clock,
    });
    this.fax = new FaxClientFactory({
      baseUrl: opts.service.baseUrl,
      caFile: opts.service.caFile,
      api: config.api,
      connections: Math.max(8, config.api.concurrency * 2),
      observer: apiObserver(this.metrics),
      gate: this.gate,
    });
    const clientFor = (user: string) => this.clientFor(user);
    // the preferences mail intake reads while a sender waits: the intake class of the gate
    this.directory = new UserDirectory({
      clientFor: (user) => this.clientFor(user, "intake"),
      refreshMs: config.notify?.preferenceRefreshMs ?? 300_000,
      clock: this.clock,
    });
    // One destination policy for every path, reading the current config (SIGHUP applies new rules).
    const destinations = destinationCheckFor(
      () => this.config.destinations,
      () => this.users,
    );
    const common = {
      store: this.store,
      clientFor,
      logger: this.log,
      clock: this.clock,
      metrics: this.metrics,
      destinations,
    };
    this.office = new OfficeConverter({ ...config.office, logger: this.log.child({ component: "office" }) });
    this.convertQueue = new ConvertQueue(this.office, {
      perUser: config.office.queuePerUser,
      logger: this.log.child({ component: "office" }),
    });
    this.refusals = new RefusalLog(() => this.clock.now());

    // with webhooks the service tells us results; polling slows down to a safety net
    const queue = config.webhooks
      ? { ...config.queue, pollIntervalMs: Math.max(config.queue.pollIntervalMs, config.webhooks.pollIntervalMs) }
      : config.queue;
    this.dispatcher = new Dispatcher({
      ...common,
      clientFor: (user) => this.clientFor(user, "dispatch"),
      api: config.api,
      queue,
      gate: this.gate,
      logger: this.log.child({ component: "dispatch" }),
    });
    // mail and print jobs are sent as soon as they are queued, not at the dispatcher's next tick
    this.store.onEnqueued(() => this.dispatcher.wake());
    this.notifier = config.notify
      ? new Notifier({
          ...common,
          notify: config.notify,
          users: this.users,
          directory: this.directory,
          dataDir: config.data,
          logger: this.log.child({ component: "notify" }),
          consoleUrl: () => this.consoleUrl(),
          addressWaitHours: config.spool?.addressWaitHours,
        })
      : null;
    // received faxes are kept and routed by inbound.routes, whichever path saw them first
    this.received = new ReceivedFaxIntake({
      store: this.store,
      clientFor,
      inbound: () => this.config.inbound,
      users: () => this.users,
      dataDir: config.data,
      logger: this.log.child({ component: "inbound" }),
      clock: this.clock,
    });
    this.escalation = new InboxEscalation({
      store: this.store,
      inbound: () => this.config.inbound,
      users: () => this.users,
      logger: this.log.child({ component: "inbox" }),
      clock: this.clock,
    });
    this.inbound = config.notify?.inbound.enabled
      ? new InboundPoller({
          ...common,
          notify: config.notify,
          users: this.users,
          directory: this.directory,
          dataDir: config.data,
          logger: this.log.child({ component: "inbound" }),
          intake: this.received,
        })
      : null;
    this.spool = config.spool
      ? new SpoolWatcher({
          ...common,
          spool: config.spool,
          users: this.users,
          defaultCountryCode: config.smtp?.defaultCountryCode ?? "1",
          readers: this.readers,
          office: this.convertQueue,
          clientFor: (user) => this.clientFor(user, "intake"),
          logger: this.refusals.tap(this.log.child({ component: "spool" }), "spool"),
        })
      : null;
    this.addressExpiry = config.spool
      ? new AddressExpiry({
          store: this.store,
          clock: this.clock,
          waitHours: config.spool.addressWaitHours,
          logger: this.log.child({ component: "spool" }),
        })
      : null;
    this.smtp = config.smtp
      ? new SmtpGateway({
          ...common,
          smtp: config.smtp,
          users: this.users,
          dataDir: config.data,
          dns: config.dns,
          directory: this.directory,
          readers: this.readers,
          office: this.convertQueue,
          partial: config.intake.partial,
          clientFor: (user) => this.clientFor(user, "intake"),
          logger: this.refusals.tap(this.log.child({ component: "smtp" }), "smtp"),
        })
      : null;
    this.health = new HealthChecks({
      probeStore: () => this.store.setState("health:probe", new Date(this.clock.now()).toISOString()),
      dataDir: config.data,
      minFreeBytes: (config.admin?.minFreeMb ?? 100) * 1_048_576,
      clock: this.clock,
      users: () => this.users,
      clientFor,
      listeners: () => this.listenerChecks(),
      stopping: () => this.stopping !== null,
    });
    this.admin = config.admin
      ? new AdminServer({
          listen: config.admin.listen,
          metrics: this.metrics,
          health: () => this.health.liveness(),
          ready: () => this.health.readiness(),
          logger: this.log.child({ component: "admin" }),
        })
      : null;
    this.keyWatch = opts.service.adminKey
      ? new KeyWatch({
          baseUrl: opts.service.baseUrl,
          adminKey: opts.service.adminKey,
          agent: this.fax.agent,
          gate: this.gate,
          dataDir: config.data,
          users: () => this.users,
          configKeyOf: (name) => this.config.users.find((u) => u.name === name)?.apiKey ?? "",
          store: this.store,
          onRotated: (user) =>
            this.applyUsers(effectiveUsers(this.config.users, this.config.data), `key of ${user} rotated`),
          logger: this.log.child({ component: "keys" }),
          clock: this.clock,
        })
      : null;
    // the HTTP listeners' share of the descriptors, after a reserve for SMTP, the store and the spool
    this.budget = descriptorBudget({ smtpConnections: config.smtp?.maxConnections ?? 0 });
    this.webhooks = config.webhooks
      ? new WebhookReceiver({
          config: config.webhooks,
          limits: this.budget.webhooks,
          tls: readReceiverTls(config.webhooks.tls),
          logger: this.log.child({ component: "webhooks" }),
          handlers: {
            outbound: async (rec) => {
              const outcome = await this.dispatcher.applyServiceRecord(rec);
              // the outcome mail goes out now, not at the notifier's next look
              if (outcome === "applied")
                this.notifier
                  ?.runOnce()
                  .catch((err) =>
                    this.log.warn({ err: describeError(err) }, "notification run after a webhook failed"),
                  );
              return outcome === "later" ? "later" : outcome === "applied";
            },
            inbound: (rec, serviceUserId) => this.receivedFax(rec, serviceUserId),
          },
        })
      : null;
    this.web = config.web
      ? new WebConsole({
          config: config.web,
          tls: readReceiverTls(config.web.tls),
          limits: this.budget.web,
          store: this.store,
          users: () => this.users,
          clientFor: (user) => this.clientFor(user, "console"),
          destinations,
          defaultCountryCode: () => this.config.smtp?.defaultCountryCode ?? "1",
          partial: () => this.config.intake.partial,
          office: this.convertQueue,
          dataDir: config.data,
          logger: this.log.child({ component: "web" }),
          clock: this.clock,
          metrics: this.metrics,
          maxUploadBytes: config.smtp?.maxMessageBytes,
          faxesPerMinute: config.smtp?.maxMessagesPerMinute,
          authFailureDelayMs: opts.webAuthFailureDelayMs,
          historyAvailable: (reserve) => this.gate.historyAvailable(reserve),
          inbound: () => this.config.inbound,
          operator: new OperatorPages({
            store: this.store,
            users: () => this.users,
            refusals: this.refusals,
            readiness: () => this.health.readiness(),
            historyAvailable: () => this.gate.historyAvailable(),
            keyExpiry: () => this.keyWatch?.expiries() ?? [],
          }),
        })
      : null;
    const smtpLimits = {
      maxRecipients: config.smtp?.maxRecipients ?? 50,
      maxMessageBytes: config.smtp?.maxMessageBytes ?? 26_214_400,
    };
    const door = mailboxDoor(
      {
        store: this.store,
        log: this.log.child({ component: "imap" }),
        metrics: this.metrics,
        readers: this.readers,
        directory: this.directory,
        clock: this.clock,
        inlineImageMinBytes: config.smtp?.inlineImageMinBytes ?? 20_480,
        office: this.office,
      },
      path.join(config.data, "incoming"),
      (name) => this.users.find((u) => u.name === name)?.mailBody ?? this.config.smtp?.body,
    );
    this.mailboxes = (config.imap?.mailboxes ?? []).map(
      (mailbox) =>
        new MailboxIntake({
          mailbox,
          users: () => this.users,
          store: this.store,
          clientFor,
          destinations,
          defaultCountryCode: () => this.config.smtp?.defaultCountryCode ?? "1",
          maxRecipients: smtpLimits.maxRecipients,
          maxMessageBytes: mailbox.maxMessageBytes ?? smtpLimits.maxMessageBytes,
          accept: door,
          logger: this.refusals.tap(this.log.child({ component: "imap" }), "imap"),
        }),
    );
    registerQueueGauges(this.metrics, this.store);
    this.metrics.gauge(
      "faxgate_api_gate_waiting",
      "API calls waiting in the gate, by caller class (docs/architecture.md)",
      ["class"],
      (g) => {
        for (const [cls, n] of Object.entries(this.gate.waitingCalls())) g.set({ class: cls }, n);
      },
    );
    this.metrics.gauge(
      "faxgate_key_held",
      "Users whose API key the fax service refused (their faxes are held)",
      ["user"],
      (g) => {
        for (const u of this.users) g.set({ user: u.name }, this.dispatcher.holds.isHeld(u.name) ? 1 : 0);
      },
    );
  }

  /** The console's address for links in mails: web.publicUrl, else where it listens; null without a console. */
  private consoleUrl(): string | null {
    const web = this.config.web;
    if (!web) return null;
    if (web.publicUrl) return web.publicUrl;
    const a = this.addresses.web;
    if (!a) return null;
    const host =
      a.host === "0.0.0.0" || a.host === "::" ? os.hostname() : a.host.includes(":") ? `[${a.host}]` : a.host;
    return `${web.tls ? "https" : "http"}://${host}:${a.port}`;
  }

  /** A received fax pushed by the service: notify its user now (else the inbound poll finds it). */
  private async receivedFax(rec: FaxRecord, serviceUserId: string | null): Promise<boolean> {
    if (!this.inbound) return false;
    let user: string | undefined;
    if (serviceUserId) {
      for (const u of this.users) {
        const me = await this.directory.get(u.name).catch(() => null);
        if (me?.userId === serviceUserId) {
          user = u.name;
          break;
        }
      }
    }
    if (!user) {
      // the record names no user we know: one look at every user's inbound history instead
      await this.inbound.runOnce();
      return true;
    }
    // a push is a hint: only a fax the service shows this user's key is taken as received
    let told: FaxRecord;
    try {
      told = await this.clientFor(user).faxInfo(rec.messageId);
    } catch (err) {
      if (isFaxgateError(err) && (err.code === "API_NOT_FOUND" || err.code === "API_FORBIDDEN")) {
        this.log.warn(
          { user, messageId: rec.messageId },
          "webhook: the service does not know this received fax; not taken",
        );
        return false;
      }
      throw err;
    }
    if (told.direction && told.direction !== "inbound") return false;
    return this.received.receive(user, told, "webhook");
  }

  /** `user`'s client for calls of `cls` (the API gate's class: docs/architecture.md). */
  clientFor(user: string, cls: GateClass = "background"): FaxApi {
    const key = `${cls}\0${user}`;
    let c = this.clients.get(key);
    if (!c) {
      const u = this.users.find((x) => x.name === user);
      if (!u) throw new Error(`no configured user named "${user}"`);
      let contactCache = this.contactCaches.get(user);
      if (!contactCache) {
        contactCache = new ContactCache((this.config.api.contactCacheSeconds ?? 30) * 1000, () => this.clock.now());
        this.contactCaches.set(user, contactCache);
      }
      c = this.fax.withKey(u.apiKey, this.log.child({ component: "api", user }), {
        gateClass: cls,
        contactCache,
        ...(cls === "console" ? { share: () => this.consoleShare.take(user) } : {}),
      });
      this.clients.set(key, c);
    }
    return c;
  }

  /** Says which protections office conversions run under; with office.sandbox required, none is no start. */
  private async officeCheck(): Promise<void> {
    if (!this.office.available()) return;
    const p = await this.office.protections();
    this.log.info({ ...p.summary }, "OFFICE converter protections");
    for (const warning of p.warnings) this.log.warn({ warning }, "OFFICE converter protection missing");
    if (!p.ok)
      throw new Error(
        `office.sandbox is required, but the converter cannot be isolated here: ${p.warnings.join("; ")}`,
      );
  }

  async start(): Promise<RunningAddresses> {
    // No other daemon can hold a lease on this queue (we hold the data folder's lock): sends and
    // notifications an earlier run left mid-way are taken back now, not when their leases run out.
    // On PostgreSQL other gateways share the queue and may be mid-send: leases there only ever
    // expire by time (the dispatcher's passes release them), never all at once at a start.
    const taken =
      this.store.backend === "sqlite" ? await this.store.releaseExpired({ all: true }) : { unknown: 0, released: 0 };
    if (taken.unknown + taken.released > 0)
      this.log.warn(
        { unknownSends: taken.unknown, leases: taken.released },
        "took back the work of an earlier run that did not stop cleanly",
      );
    await this.officeCheck();
    // users an earlier run left held for a refused key stay held until a working key is loaded
    await this.dispatcher.holds.load(this.users.map((u) => u.name));
    this.dispatcher.start();
    this.notifier?.start();
    this.inbound?.start();
    this.escalation.start();
    if (this.spool) {
      await this.spool.start();
      this.addresses.spoolRoot = this.config.spool!.root;
    }
    this.addressExpiry?.start();
    if (this.smtp) this.addresses.smtp = await this.smtp.listen();
    for (const m of this.mailboxes) m.start();
    if (this.admin) this.addresses.admin = await this.admin.listen();
    this.keyWatch?.start();
    if (this.webhooks || this.web) {
      const b = this.budget;
      this.log.info(
        {
          softLimit: b.softLimit,
          inUse: b.inUse,
          reserve: b.reserve,
          web: this.web ? { max: b.web.maxConnections, perAddress: b.web.perAddress } : undefined,
          webhooks: this.webhooks ? { max: b.webhooks.maxConnections, perAddress: b.webhooks.perAddress } : undefined,
        },
        "descriptor budget for the HTTP listeners",
      );
    }
    if (this.webhooks) this.addresses.webhooks = await this.webhooks.listen();
    if (this.web) this.addresses.web = await this.web.listen();
    this.addresses.outbox = outboxDir(this.config);
    for (const risk of riskySettings(this.config)) this.log.warn({ risk }, "RISKY setting");
    this.log.info(
      {
        smtp: this.addresses.smtp,
        admin: this.addresses.admin,
        web: this.addresses.web,
        spool: this.addresses.spoolRoot,
        users: this.users.length,
        queue: this.store.backend,
      },
      "STARTED",
    );
    return this.addresses;
  }

  /** SIGHUP: new users and keys, fresh preferences; listeners and sessions stay up. */
  async reload(): Promise<void> {
    if (!this.opts.reloadConfig) return;
    let next: Config;
    try {
      next = this.opts.reloadConfig();
    } catch (err) {
      this.log.error(
        { err: describeError(err) },
        "RELOAD refused: the config file is invalid; keeping the running config",
      );
      return;
    }
    // inbound rules were checked by the load (an error names the rule); new ones apply to the next fax
    this.config = { ...this.config, users: next.users, destinations: next.destinations, inbound: next.inbound };
    await this.applyUsers(effectiveUsers(next.users, this.config.data), "SIGHUP");
    // a renewed certificate (certbot) is taken without a restart: the same files, read again
    try {
      this.smtp?.reloadTls();
    } catch (err) {
      this.log.error(
        { err: describeError(err) },
        "RELOAD: the SMTP certificate cannot be read; keeping the one in use",
      );
    }
  }

  private async applyUsers(users: UserConfig[], why: string): Promise<void> {
    this.users = users;
    this.clients.clear();
    this.contactCaches.clear();
    this.directory.invalidate();
    this.smtp?.updateUsers(users);
    this.notifier?.updateUsers(users);
    this.inbound?.updateUsers(users);
    this.web?.updateUsers(users);
    await this.spool?.updateUsers(users);
    // faxes held for a refused key are tried again at once (each send proves the key first)
    await this.dispatcher.keysChanged(users.map((u) => u.name));
    this.log.info({ users: users.length, why }, "RELOADED users");
  }

  private listenerChecks(): Record<string, { ok: boolean; detail?: string }> {
    const checks: Record<string, { ok: boolean; detail?: string }> = {};
    if (this.smtp)
      checks.smtp = {
        ok: this.addresses.smtp.length > 0,
        detail: this.addresses.smtp.map((a) => `${a.host}:${a.port}`).join(" "),
      };
    if (this.spool) checks.spool = { ok: this.addresses.spoolRoot !== null };
    for (const m of this.mailboxes)
      checks[`imap ${m.name}`] = { ok: m.isConnected, detail: m.isConnected ? "connected" : "not connected" };
    return checks;
  }

  /** Ordered shutdown (STYLE.md habit 10), bounded by `timeoutMs`. */
  stop(timeoutMs = 20_000): Promise<void> {
    if (!this.stopping) this.stopping = this.doStop(timeoutMs);
    return this.stopping;
  }

  private async doStop(timeoutMs: number): Promise<void> {
    const deadline = this.clock.now() + timeoutMs;
    const left = () => Math.max(1000, deadline - this.clock.now());
    const step = async (name: string, fn: () => Promise<void> | void) => {
      try {
        await fn();
      } catch (err) {
        this.log.warn({ err: describeError(err) }, `shutdown: ${name} failed`);
      }
    };
    this.log.info("STOPPING: no new mail or files, finishing sends in flight");
    await step("smtp", () => this.smtp?.close({ timeoutMs: Math.min(5000, left()) }));
    await step("spool", () => this.spool?.stop());
    await step("address expiry", () => this.addressExpiry?.stop());
    await step("imap", async () => {
      await Promise.all(this.mailboxes.map((m) => m.stop()));
    });
    await step("webhooks", () => this.webhooks?.close());
    await step("web", () => this.web?.close());
    await step("readers", () => this.readers.close());
    await step("office", async () => {
      await this.convertQueue.close();
      await this.office.close();
    });
    await step("keys", () => this.keyWatch?.stop());
    await step("dispatcher", () => this.dispatcher.stop({ timeoutMs: left() }));
    await step("inbound", () => this.inbound?.stop());
    await step("inbox", () => this.escalation.stop());
    await step("notifier", () => this.notifier?.stop());
    await step("admin", () => this.admin?.close());
    await step("store", () => this.store.close());
    await step("lock", () => this.lock.release());
    await step("http", () => this.fax.close());
    this.log.info("STOPPED");
  }
}
