// The composition root: the one place that wires objects. Each part is built by a small factory
// in src/parts/ and kept in one list, started in order and stopped in reverse (STYLE.md habits
// 10 and 15): the queue exists before anything can put work in it, and at stop the doors close
// first (421, watchers), then claiming and the sends in flight, then the queue and the lock.
import { systemClock, type Clock } from "./clock.js";
import {
  outboxDir,
  riskySettings,
  type Config,
  restartNoteKey,
  restartOnlyChanges,
  type RestartNote,
} from "./config/index.js";
import { describeError } from "./errors.js";
import type { GateClass, FaxApi } from "./fax/index.js";
import type { InboxEscalation, ReceivedFaxIntake } from "./inbound/index.js";
import type { Logger } from "./log/index.js";
import { Metrics } from "./metrics/index.js";
import {
  createAdmin,
  type ServiceEndpoint,
  createConverters,
  createCore,
  createDirectory,
  type DirectoryParts,
  type Core,
  type RunningAddresses,
  dataFolderParts,
  holdDataFolder,
  openDataFolder,
  createDispatcher,
  registerGatewayGauges,
  consoleUrl,
  createHttpListeners,
  createKeyWatch,
  createMailDoor,
  createMailboxes,
  createNotify,
  partChecks,
  startParts,
  stopParts,
  type Part,
  createSmtp,
  createSpool,
  createRetention,
  createDeliveries,
  createOcr,
  ledgerSealPart,
} from "./parts/index.js";
import type { KeyWatch } from "./keys/index.js";
import type { OcrDuty } from "./ocr/index.js";
import type { ConfirmExpiry } from "./intake/index.js";
import type { SmtpGateway } from "./smtp/index.js";
import type { AddressExpiry } from "./spool/index.js";
import type { DaemonLock, QueueStore } from "./store/index.js";
import type { RefusalLog } from "./web/index.js";
import type { WebhookReceiver } from "./webhooks/index.js";

export type { ServiceEndpoint } from "./parts/index.js";
export type { RunningAddresses } from "./parts/index.js";

export interface GatewayOptions {
  /** Where the fax service is; in sandbox mode the embedded emulator's address. */
  service: ServiceEndpoint;
  logger: Logger;
  clock?: Clock;
  /** Called on SIGHUP to get a fresh config (users and their preferences are reloaded). */
  reloadConfig?: () => Config;
  /** The data folder's lock when the caller took it already (before starting a sandbox); released at stop. */
  lock?: DaemonLock;
  /** The queue, when the caller opened it already (`Gateway.open` does). */
  store?: QueueStore;
}

export class Gateway {
  readonly metrics = new Metrics({ defaultMetrics: true });
  readonly store: QueueStore;
  readonly received: ReceivedFaxIntake;
  readonly escalation: InboxEscalation;
  /** Ends print jobs that waited too long for their owner's number (public for tests with a manual clock). */
  readonly addressExpiry: AddressExpiry | null;
  /** Ends faxes to new numbers their owner did not confirm in time (public for tests with a manual clock). */
  readonly confirmExpiry: ConfirmExpiry;
  readonly webhooks: WebhookReceiver | null;
  /** Watches the users' key expiry (public for tests that run its check at once). */
  readonly keyWatch: KeyWatch | null;
  /** Recent SMTP and spool refusals, for the console's operator page. */
  readonly refusals: RefusalLog;
  /** The OCR duty, null when it does not run (public for tests that wait for it to be idle). */
  readonly ocr: OcrDuty | null;
  private readonly core: Core;
  private readonly directory: DirectoryParts;
  private readonly smtp: SmtpGateway | null;
  /** Started in this order, stopped in reverse. */
  private readonly parts: Part[];
  private stopping: Promise<void> | null = null;

  /** Locks the data folder and opens the queue the config names (either backend), then wires the rest. */
  static async open(config: Config, opts: GatewayOptions): Promise<Gateway> {
    const held = await openDataFolder(config, opts);
    try {
      return new Gateway(config, { ...opts, ...held });
    } catch (err) {
      if (!opts.store) await held.store.close().catch(() => undefined);
      if (!opts.lock) held.lock.release();
      throw err;
    }
  }

  /** Wires the parts; the data folder is taken here only when `open` did not (SQLite only). */
  constructor(
    config: Config,
    private readonly opts: GatewayOptions,
  ) {
    const clock = opts.clock ?? systemClock;
    const logger = opts.logger;
    const held = holdDataFolder(config, opts);
    this.store = held.store;
    const core = createCore({ config, service: opts.service, store: this.store, clock, logger, metrics: this.metrics });
    this.refusals = core.refusals;
    this.core = core;

    const directory = createDirectory(core);
    this.directory = directory;
    const converters = createConverters(core);
    const door = createMailDoor(core, converters);
    const dispatch = createDispatcher(core);
    const deliveries = createDeliveries(core);
    const ocr = createOcr(core);
    this.ocr = ocr.duty;
    const notify = createNotify(core, () => consoleUrl(core), {
      connectorQueued: () => deliveries.queue.poke(),
      ocr,
    });
    const notifier = notify.notifier;
    const admin = createAdmin(core, {
      listeners: () => partChecks(this.parts),
      stopping: () => this.stopping !== null,
    });
    const keys = createKeyWatch(core, opts.service);
    const http = createHttpListeners(core, converters, {
      applyServiceRecord: (rec) => dispatch.dispatcher.applyServiceRecord(rec),
      notifyNow: notifier ? () => notifier.runOnce() : undefined,
      receivedFax: notify.pushedFax,
      readiness: () => admin.health.readiness(),
      keyExpiry: () => keys.keyWatch?.expiries() ?? [],
      extraRoutes: directory.webRoutes,
      directoryView: directory.view ?? undefined,
    });
    const spool = createSpool(core, converters);
    const retention = createRetention(core);
    const smtp = createSmtp(core, door.mail);
    registerGatewayGauges(core, () => dispatch.dispatcher.holds);

    this.received = notify.received;
    this.escalation = notify.escalation;
    this.addressExpiry = spool.addressExpiry;
    this.confirmExpiry = door.confirmExpiry;
    this.webhooks = http.webhooks;
    this.keyWatch = keys.keyWatch;
    this.smtp = smtp.smtp;
    this.parts = [
      // the ledger's sealing stops last: a final pass seals what the doors recorded on the way out
      ledgerSealPart(core.ledger),
      core.api.part,
      ...dataFolderParts(held, logger),
      // people before the doors that look them up
      directory.part,
      ...converters.parts,
      admin.part,
      ...notify.parts,
      ocr.part,
      dispatch.part,
      keys.part,
      ...http.parts,
      door.part,
      door.expiryPart,
      createMailboxes(core, door.mail),
      ...spool.parts,
      retention.part,
      deliveries.part,
      smtp.part,
    ];
  }

  /** `user`'s client for calls of `cls` (the API gate's class: docs/architecture.md). */
  clientFor(user: string, cls: GateClass = "background"): FaxApi {
    return this.core.api.clientFor(user, cls);
  }

  async start(): Promise<RunningAddresses> {
    const { config, addresses, logger, live } = this.core;
    await startParts(this.parts);
    // a restart applies everything: an earlier reload's note is done with
    await this.store.setState(restartNoteKey(), "");
    addresses.outbox = outboxDir(config);
    for (const risk of riskySettings(config)) logger.warn({ risk }, "RISKY setting");
    logger.info(
      {
        smtp: addresses.smtp,
        admin: addresses.admin,
        web: addresses.web,
        spool: addresses.spoolRoot,
        users: live.users().length,
        queue: this.store.backend,
      },
      "STARTED",
    );
    return addresses;
  }

  /** SIGHUP: new users and keys, fresh preferences; listeners and sessions stay up. */
  async reload(): Promise<void> {
    if (!this.opts.reloadConfig) return;
    const log = this.core.logger;
    let next: Config;
    try {
      next = this.opts.reloadConfig();
    } catch (err) {
      log.error({ err: describeError(err) }, "RELOAD refused: the config file is invalid; keeping the running config");
      await this.recordReload({ applied: false });
      return;
    }
    // what a reload cannot apply is said, not silently kept as started (config/restart-needed.ts)
    const pending = restartOnlyChanges(this.core.config, next);
    if (pending.length)
      log.warn(
        { settings: pending },
        `RELOAD: ${pending.join(", ")} changed; only a restart applies ${pending.length > 1 ? "them" : "it"} (a SIGHUP applies users, destinations and inbound)`,
      );
    const note: RestartNote | null = pending.length
      ? { settings: pending, at: new Date(this.core.clock.now()).toISOString() }
      : null;
    await this.store
      .setState(restartNoteKey(), note ? JSON.stringify(note) : "")
      .catch((err) => log.warn({ err: describeError(err) }, "RELOAD: the restart note could not be stored"));
    // inbound rules were checked by the load (an error names the rule); new ones apply to the next fax
    await this.core.live.reload(next);
    // the directory's stored list read again (`faxgate directory sync` wrote it) and a sync now
    await this.directory
      .refresh()
      .catch((err) => log.error({ err: describeError(err) }, "RELOAD: the directory list could not be read"));
    await this.recordReload({ applied: true, restartNeeded: pending.length });
    // a renewed certificate (certbot) is taken without a restart: the same files, read again
    try {
      this.smtp?.reloadTls();
    } catch (err) {
      log.error({ err: describeError(err) }, "RELOAD: the SMTP certificate cannot be read; keeping the one in use");
    }
  }

  /** Each reload, applied or refused, is a ledger row (who sent the SIGHUP the process cannot tell). */
  private async recordReload(detail: Record<string, number | boolean>): Promise<void> {
    await this.core.ledger
      .record({
        action: "config-reloaded",
        actor: { kind: "gateway" },
        object: { kind: "config", id: "config" },
        door: "gateway",
        detail,
      })
      .catch((err: unknown) =>
        this.core.logger.error({ err: describeError(err) }, "LEDGER the reload's row was not recorded"),
      );
  }

  /** Ordered shutdown (STYLE.md habit 10), bounded by `timeoutMs`. */
  stop(timeoutMs = 20_000): Promise<void> {
    if (!this.stopping) this.stopping = this.doStop(timeoutMs);
    return this.stopping;
  }

  private async doStop(timeoutMs: number): Promise<void> {
    const { logger, clock } = this.core;
    logger.info("STOPPING: no new mail or files, finishing sends in flight");
    await stopParts(this.parts, { timeoutMs, now: () => clock.now(), logger });
    logger.info("STOPPED");
  }
}
