// The one place that wires objects together: config -> store -> API clients -> dispatcher,
// notifier, spool, SMTP -> admin. Start order is inside-out (the queue exists before anything
// can put work in it); shutdown is outside-in (stop accepting, then drain, then close the store).
import { mkdirSync } from 'node:fs';
import type { Dispatcher as HttpDispatcher } from 'undici';
import { AdminServer, type HealthReport } from './admin/server.js';
import { systemClock, type Clock } from './clock.js';
import { outboxDir } from './config/load.js';
import type { Config, UserConfig } from './config/schema.js';
import { Dispatcher } from './dispatch/dispatcher.js';
import { DaemonLock } from './store/daemon-lock.js';
import { describeError } from './errors.js';
import { createFaxAgent, FaxClient } from './fax/client.js';
import type { FaxApi } from './fax/types.js';
import { UserDirectory } from './fax/user-directory.js';
import type { Logger } from './log/logger.js';
import { apiObserver, Metrics } from './metrics/metrics.js';
import { InboundPoller } from './notify/inbound.js';
import { Notifier } from './notify/notifier.js';
import { SmtpGateway } from './smtp/server.js';
import { SpoolWatcher } from './spool/watcher.js';
import { JOB_STATES, RECIPIENT_STATES } from './store/types.js';
import { Store } from './store/store.js';
import { KeyWatch } from './keys/key-watch.js';
import { ReaderPool } from './workers/pool.js';
import { OfficeConverter } from './intake/office-convert.js';
import { effectiveUsers } from './keys/key-overrides.js';

export interface ServiceEndpoint {
  baseUrl: string;
  caFile?: string;
  adminKey?: string;
}

export interface GatewayOptions {
  config: Config;
  /** Where the fax service is; in sandbox mode the embedded emulator's address. */
  service: ServiceEndpoint;
  logger: Logger;
  clock?: Clock;
  /** Called on SIGHUP to get a fresh config (users and their preferences are reloaded). */
  reloadConfig?: () => Config;
  /** The data folder's lock when the caller took it already (before starting a sandbox); released at stop. */
  lock?: DaemonLock;
}

export interface RunningAddresses {
  smtp: Array<{ host: string; port: number }>;
  admin: { host: string; port: number } | null;
  spoolRoot: string | null;
  outbox: string | null;
}

export class Gateway {
  readonly metrics = new Metrics({ defaultMetrics: true });
  readonly store: Store;
  private readonly lock: DaemonLock;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly agent: HttpDispatcher;
  private readonly clients = new Map<string, FaxApi>();
  private users: UserConfig[];
  private readonly directory: UserDirectory;
  private readonly dispatcher: Dispatcher;
  private readonly notifier: Notifier | null;
  private readonly inbound: InboundPoller | null;
  private readonly spool: SpoolWatcher | null;
  private readonly smtp: SmtpGateway | null;
  private readonly admin: AdminServer | null;
  private readonly keyWatch: KeyWatch | null;
  /** MIME parsing and PDF text on worker threads (started with the first mail or PDF). */
  private readonly readers = new ReaderPool();
  /** Office documents to PDF, shared by mail and the print folders (one concurrency limit). */
  private readonly office: OfficeConverter;
  private addresses: RunningAddresses = { smtp: [], admin: null, spoolRoot: null, outbox: null };
  private lastPing: { at: number; ok: boolean; detail?: string } | null = null;
  private stopping: Promise<void> | null = null;

  constructor(private config: Config, private readonly opts: GatewayOptions) {
    this.log = opts.logger;
    this.clock = opts.clock ?? systemClock;
    mkdirSync(config.data, { recursive: true, mode: 0o750 });
    this.lock = opts.lock ?? DaemonLock.acquire(config.data);
    try {
      this.store = Store.open({ dataDir: config.data, clock: this.clock, logger: this.log.child({ component: 'store' }) });
    } catch (err) {
      this.lock.release();
      throw err;
    }
    this.users = effectiveUsers(config.users, config.data);
    this.agent = createFaxAgent({ caFile: opts.service.caFile, timeoutMs: config.api.timeoutMs, connections: Math.max(8, config.api.concurrency * 2) });
    const clientFor = (user: string) => this.clientFor(user);
    this.directory = new UserDirectory({ clientFor, refreshMs: config.notify?.preferenceRefreshMs ?? 300_000, clock: this.clock });
    const common = { store: this.store, clientFor, logger: this.log, clock: this.clock, metrics: this.metrics };
    this.office = new OfficeConverter(config.office);

    this.dispatcher = new Dispatcher({ ...common, api: config.api, queue: config.queue, logger: this.log.child({ component: 'dispatch' }) });
    // mail and print jobs are sent as soon as they are queued, not at the dispatcher's next tick
    this.store.onEnqueued(() => this.dispatcher.wake());
    this.notifier = config.notify
      ? new Notifier({ ...common, notify: config.notify, users: this.users, directory: this.directory, dataDir: config.data, logger: this.log.child({ component: 'notify' }) })
      : null;
    this.inbound = config.notify && config.notify.inbound.enabled
      ? new InboundPoller({ ...common, notify: config.notify, users: this.users, directory: this.directory, dataDir: config.data, logger: this.log.child({ component: 'inbound' }) })
      : null;
    this.spool = config.spool
      ? new SpoolWatcher({ ...common, spool: config.spool, users: this.users, defaultCountryCode: config.smtp?.defaultCountryCode ?? '1', readers: this.readers, office: this.office, logger: this.log.child({ component: 'spool' }) })
      : null;
    this.smtp = config.smtp
      ? new SmtpGateway({ ...common, smtp: config.smtp, users: this.users, dataDir: config.data, directory: this.directory, readers: this.readers, office: this.office, logger: this.log.child({ component: 'smtp' }) })
      : null;
    this.admin = config.admin
      ? new AdminServer({ listen: config.admin.listen, metrics: this.metrics, health: () => this.health(), logger: this.log.child({ component: 'admin' }) })
      : null;
    this.keyWatch = opts.service.adminKey
      ? new KeyWatch({
          baseUrl: opts.service.baseUrl,
          adminKey: opts.service.adminKey,
          agent: this.agent,
          dataDir: config.data,
          users: () => this.users,
          configKeyOf: (name) => this.config.users.find((u) => u.name === name)?.apiKey ?? '',
          store: this.store,
          onRotated: (user) => this.applyUsers(effectiveUsers(this.config.users, this.config.data), `key of ${user} rotated`),
          logger: this.log.child({ component: 'keys' }),
          clock: this.clock,
        })
      : null;
    this.registerGauges();
  }

  clientFor(user: string): FaxApi {
    let c = this.clients.get(user);
    if (!c) {
      const u = this.users.find((x) => x.name === user);
      if (!u) throw new Error(`no configured user named "${user}"`);
      c = new FaxClient({
        baseUrl: this.opts.service.baseUrl,
        apiKey: u.apiKey,
        variant: this.config.api.variant,
        dispatcher: this.agent,
        timeoutMs: this.config.api.timeoutMs,
        observer: apiObserver(this.metrics),
        logger: this.log.child({ component: 'api', user }),
      });
      this.clients.set(user, c);
    }
    return c;
  }

  async start(): Promise<RunningAddresses> {
    // No other daemon can hold a lease on this queue (we hold the data folder's lock): sends and
    // notifications an earlier run left mid-way are taken back now, not when their leases run out.
    const taken = this.store.releaseExpired({ all: true });
    if (taken.unknown + taken.released > 0) this.log.warn({ unknownSends: taken.unknown, leases: taken.released }, 'took back the work of an earlier run that did not stop cleanly');
    this.dispatcher.start();
    this.notifier?.start();
    this.inbound?.start();
    if (this.spool) {
      await this.spool.start();
      this.addresses.spoolRoot = this.config.spool!.root;
    }
    if (this.smtp) this.addresses.smtp = await this.smtp.listen();
    if (this.admin) this.addresses.admin = await this.admin.listen();
    this.keyWatch?.start();
    this.addresses.outbox = outboxDir(this.config);
    this.log.info({ smtp: this.addresses.smtp, admin: this.addresses.admin, spool: this.addresses.spoolRoot, users: this.users.length }, 'STARTED');
    return this.addresses;
  }

  /** SIGHUP: new users and keys, fresh preferences; listeners and sessions stay up. */
  async reload(): Promise<void> {
    if (!this.opts.reloadConfig) return;
    let next: Config;
    try {
      next = this.opts.reloadConfig();
    } catch (err) {
      this.log.error({ err: describeError(err) }, 'RELOAD refused: the config file is invalid; keeping the running config');
      return;
    }
    this.config = { ...this.config, users: next.users };
    await this.applyUsers(effectiveUsers(next.users, this.config.data), 'SIGHUP');
  }

  private async applyUsers(users: UserConfig[], why: string): Promise<void> {
    this.users = users;
    this.clients.clear();
    this.directory.invalidate();
    this.smtp?.updateUsers(users);
    this.notifier?.updateUsers(users);
    this.inbound?.updateUsers(users);
    await this.spool?.updateUsers(users);
    this.log.info({ users: users.length, why }, 'RELOADED users');
  }

  async health(): Promise<HealthReport> {
    const checks: HealthReport['checks'] = {};
    try {
      this.store.setState('health:probe', new Date(this.clock.now()).toISOString());
      checks.store = { ok: true };
    } catch (err) {
      checks.store = { ok: false, detail: describeError(err) };
    }
    checks.api = await this.pingApi();
    if (this.smtp) checks.smtp = { ok: this.addresses.smtp.length > 0, detail: this.addresses.smtp.map((a) => `${a.host}:${a.port}`).join(' ') };
    if (this.spool) checks.spool = { ok: this.addresses.spoolRoot !== null };
    if (this.stopping) checks.shutdown = { ok: false, detail: 'shutting down' };
    const ok = Object.values(checks).every((c) => c.ok);
    return { status: ok ? 'ok' : 'failing', checks };
  }

  /** API reachability, cached for 15 s so a scraping loop does not hammer the service. */
  private async pingApi(): Promise<{ ok: boolean; detail?: string }> {
    const now = this.clock.now();
    if (this.lastPing && now - this.lastPing.at < 15_000) return { ok: this.lastPing.ok, detail: this.lastPing.detail };
    const first = this.users[0];
    let result: { ok: boolean; detail?: string };
    if (!first) result = { ok: true, detail: 'no users configured' };
    else {
      try {
        await this.clientFor(first.name).ping();
        result = { ok: true };
      } catch (err) {
        result = { ok: false, detail: describeError(err) };
      }
    }
    this.lastPing = { at: now, ...result };
    return result;
  }

  private registerGauges(): void {
    const store = this.store;
    this.metrics.gauge('faxgate_jobs', 'Jobs by state', ['state'], (g) => {
      const c = store.counts();
      for (const s of JOB_STATES) g.set({ state: s }, c.jobs[s] ?? 0);
    });
    this.metrics.gauge('faxgate_recipients', 'Recipients by state', ['state'], (g) => {
      const c = store.counts();
      for (const s of RECIPIENT_STATES) g.set({ state: s }, c.recipients[s] ?? 0);
    });
    this.metrics.gauge('faxgate_queue_oldest_age_seconds', 'Age of the oldest job that is not final', [], (g) => {
      g.set(store.counts().oldestActiveAgeSeconds ?? 0);
    });
    this.metrics.gauge('faxgate_notifications_pending', 'Notification mails waiting to be sent', [], (g) => {
      g.set(store.counts().notificationsPending);
    });
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
    this.log.info('STOPPING: no new mail or files, finishing sends in flight');
    await step('smtp', () => this.smtp?.close({ timeoutMs: Math.min(5000, left()) }));
    await step('spool', () => this.spool?.stop());
    await step('readers', () => this.readers.close());
    await step('office', () => this.office.close());
    await step('keys', () => this.keyWatch?.stop());
    await step('dispatcher', () => this.dispatcher.stop({ timeoutMs: left() }));
    await step('inbound', () => this.inbound?.stop());
    await step('notifier', () => this.notifier?.stop());
    await step('admin', () => this.admin?.close());
    await step('store', () => this.store.close());
    await step('lock', () => this.lock.release());
    await step('http', () => this.agent.close());
    this.log.info('STOPPED');
  }
}
