// The scheduler (Postfix qmgr): claims due recipients from the store, sends them through one
// rate- and concurrency-bounded gate, reconciles unknown outcomes and follows accepted faxes.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import PQueue from "p-queue";
import type { ApiConfig, QueueConfig } from "../config/index.js";
import type { Clock } from "../clock.js";
import { describeError, FaxgateError } from "../errors.js";
import type { FaxApi, FaxRecord, ApiGate } from "../fax/index.js";
import { childLog, type Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import { Periodic } from "../periodic.js";
import type { ClaimedGroup, Job, QueueStore } from "../store/index.js";
import type { DispatchContext, FleetShare } from "./context.js";
import { KeyHolds } from "../keys/index.js";
import type { Ledger } from "../ledger/index.js";
import { KEY_HELD } from "./outcome.js";
import { sendGroup } from "./send.js";
import { pollProcessing, reconcileUnknown } from "./track.js";
import type { DestinationCheck } from "../recipients/index.js";
import { applyPushedRecord, type PushedOutcome } from "./pushed-result.js";

export interface DispatcherOptions {
  store: QueueStore;
  clientFor: (user: string) => FaxApi;
  api: ApiConfig;
  queue: QueueConfig;
  logger: Logger;
  clock: Clock;
  /** This gateway's name on the leases it holds (dispatcherOwner()). */
  owner: string;
  metrics: Metrics;
  /** Called after every timed pass (tests wait on it instead of sleeping). */
  onPassEnd?: () => void;
  /** The destination policy (the gateway's rules and each user's own), checked again just before each send. */
  destinations: DestinationCheck;
  /** The API gate the clients share (src/fax/api-gate.ts), if any. */
  gate?: ApiGate;
  /** The compliance ledger: each outcome of a send is a row (ledger-rows.ts). */
  ledger: Pick<Ledger, "record">;
  /** [reply] jobs: their reply sheet (src/reply-sheet/); without it they go without one */
  replySheets?: DispatchContext["replySheets"];
  /** The fleet sharing the store's account budget (PostgreSQL), if any. */
  fleet?: FleetShare;
}

/** How often the loop looks for due work; status polls follow queue.pollInterval. */
const TICK_MS = 1000;
/**
 * Expired leases and unknown sends are looked for at most this often (real time): a pass woken by
 * each new job only claims, so a mail burst over a long queue does not scan it once a mail.
 */
const HOUSEKEEPING_MS = 250;
/** Passes woken by new work or a finished send come at most this often, one claim for a burst. */
const WAKE_GAP_MS = 20;

function rateGate(api: ApiConfig): { intervalCap: number; interval: number } {
  if (api.ratePerSecond < 1) return { intervalCap: 1, interval: Math.round(1000 / api.ratePerSecond) };
  const cap = Math.ceil(api.ratePerSecond);
  return { intervalCap: cap, interval: Math.round((1000 * cap) / api.ratePerSecond) };
}

/** A lease owner unique to this process: host, pid and a few random bytes (a pid is reused). */
export function dispatcherOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

export class Dispatcher {
  private readonly ctx: DispatchContext;
  private readonly gate: PQueue;
  /** The sends started and not yet over: their leases are renewed, and stop() waits for them. */
  private readonly inFlight = new Map<ClaimedGroup, Promise<void>>();
  /**
   * The numbers at their limit when the last claim found nothing due (null: it found some, or a
   * fax may have ended since). A new job for those numbers only is not worth a pass: each pass
   * reads the waiting rows of such numbers over again, and mail to a busy number would otherwise
   * make the main thread read the whole backlog for every message.
   */
  private blocked: Set<string> | null = null;
  /** unblock()s so far: a claim's blocked numbers stand only if no fax may have ended while it ran. */
  private unblocks = 0;
  private loop: Periodic<void> | null = null;
  private leaseTimer: NodeJS.Timeout | null = null;
  private resumeTimer: NodeJS.Timeout | null = null;
  private pausedUntil = 0;
  private lastPoll = 0;
  private lastHousekeeping = Number.NEGATIVE_INFINITY;
  /** Failed passes in a row, and when the last one was logged (a read-only disk fails every pass). */
  private failedPasses = 0;
  private failureLoggedAt = 0;
  private stopped = false;
  private reconciling: Promise<void> | null = null;
  private polling: Promise<void> | null = null;
  private started = false;

  constructor(private readonly opts: DispatcherOptions) {
    this.gate = new PQueue({ concurrency: opts.api.concurrency, ...rateGate(opts.api) });
    this.ctx = {
      store: opts.store,
      clientFor: opts.clientFor,
      api: opts.api,
      queue: opts.queue,
      log: opts.logger,
      clock: opts.clock,
      owner: opts.owner,
      metrics: opts.metrics,
      destinations: opts.destinations,
      call: (fn) => this.call(fn),
      pause: (ms) => this.pause(ms),
      holds: new KeyHolds(opts.store, (err) =>
        opts.logger.error({ err: describeError(err) }, "could not record a key hold"),
      ),
      gate: opts.gate,
      ...(opts.fleet ? { fleet: opts.fleet } : {}),
      keyRefused: (user, reason) => this.keyRefused(user, reason),
      keyWorks: (user) => this.keyWorks(user),
      ledger: opts.ledger,
      ...(opts.replySheets ? { replySheets: opts.replySheets } : {}),
    };
  }

  /** Users whose key the service refused; their faxes wait (faxgate status, /metrics). */
  get holds(): KeyHolds {
    return this.ctx.holds;
  }

  private keyRefused(user: string, reason: string): void {
    if (!this.ctx.holds.hold(user, reason, new Date(this.ctx.clock.now()))) return;
    this.ctx.log.error(
      { user, reason },
      `KEY REFUSED: the fax service refused the API key of ${user}; their faxes are held (none failed) until a working key is loaded (SIGHUP or \`faxgate keys rotate\`)`,
    );
    this.ctx.store
      .enqueueNotification({
        kind: "alert",
        user,
        dedupeKey: `key-refused:${user}:${this.ctx.clock.now()}`,
        payload: {
          subject: `the API key of ${user} was refused; faxes are held`,
          text: `The fax service refused the API key the gateway uses for ${user} (${reason}). Their faxes are held, none has failed; they go out once a working key is loaded.`,
          action:
            "Put a working key into the config and reload the gateway (SIGHUP), or rotate it with `faxgate keys rotate`.",
        },
      })
      .catch((err: unknown) =>
        this.ctx.log.error({ err: describeError(err) }, "could not queue the key-refused notice"),
      );
  }

  private keyWorks(user: string): void {
    if (!this.ctx.holds.release(user)) return;
    this.ctx.store.wakeDeferred(user, KEY_HELD).then(
      (woken) => {
        this.ctx.log.warn({ user, faxes: woken }, "KEY WORKS again: sending the held faxes");
        this.kick();
      },
      (err: unknown) => this.ctx.log.error({ err: describeError(err), user }, "could not wake the held faxes"),
    );
  }

  /**
   * Keys were reloaded (SIGHUP, rotation): every held user's faxes are tried at once, each send
   * first proving the key (a key still refused is held again, without sending).
   */
  async keysChanged(users: readonly string[] = []): Promise<void> {
    // held users of this run, and those an earlier run left held (kept in the store)
    await this.ctx.holds.load(users);
    for (const user of new Set([...this.ctx.holds.users(), ...users.filter((u) => this.ctx.holds.isHeld(u))])) {
      const woken = await this.ctx.store.wakeDeferred(user, KEY_HELD);
      this.ctx.log.info({ user, faxes: woken }, "keys reloaded: trying the held faxes");
    }
    this.kick();
  }

  get owner(): string {
    return this.ctx.owner;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopped = false;
    this.ctx.store.releaseExpired().then(
      (released) => {
        if (released.unknown > 0)
          this.ctx.log.warn(
            { sends: released.unknown },
            "sends interrupted by an earlier stop are now unknown and will be reconciled",
          );
      },
      (err: unknown) => this.ctx.log.error({ err: describeError(err) }, "could not take back expired leases"),
    );
    this.leaseTimer = setInterval(() => this.renewLeases(), Math.max(200, Math.floor(this.ctx.queue.lease / 3)));
    this.leaseTimer.unref();
    // a fresh loop per start: stop() ends one for good
    // only a pass that did the housekeeping writes proves the store works again
    this.loop = new Periodic(
      () =>
        this.pass(false).then((tidy) => {
          if (tidy) this.passRecovered();
        }),
      {
        intervalMs: Math.min(TICK_MS, this.ctx.queue.pollInterval),
        wakeGapMs: WAKE_GAP_MS,
        onError: (err) => this.passFailed(err),
        onRunEnd: this.opts.onPassEnd,
      },
    );
    this.loop.start();
  }

  /** Logs the first failed pass, then one line a minute with the count, not one per pass. */
  private passFailed(err: unknown): void {
    this.failedPasses += 1;
    const now = this.ctx.clock.now();
    if (this.failedPasses === 1 || now - this.failureLoggedAt >= 60_000) {
      this.failureLoggedAt = now;
      this.ctx.log.error(
        { err: describeError(err), failedPasses: this.failedPasses },
        "dispatch pass failed; retrying every tick",
      );
    }
  }

  private passRecovered(): void {
    if (this.failedPasses === 0) return;
    this.ctx.log.info({ failedPasses: this.failedPasses }, "dispatch passes work again");
    this.failedPasses = 0;
  }

  /** A result the service pushed (webhook): applied as a polled one would be (see pushed-result.ts). */
  async applyServiceRecord(rec: FaxRecord): Promise<PushedOutcome> {
    const outcome = await applyPushedRecord(this.ctx, rec);
    // a deferred retry (busy, no answer) may now be due sooner than the next tick
    if (outcome === "applied") this.kick();
    return outcome;
  }

  /**
   * New work was queued in this process: claim it now instead of at the next tick, unless every
   * number it is for was at its limit when the last claim found nothing (the tick still looks).
   */
  wake(job: Job): void {
    const blocked = this.blocked;
    if (blocked && job.recipients.length > 0 && job.recipients.every((r) => blocked.has(r.number))) return;
    this.kick();
  }

  /** A fax may have ended (its number has room again): new jobs wake a pass again. */
  private unblock(): void {
    this.blocked = null;
    this.unblocks += 1;
  }

  /** A send finished, so there is room in the gate: look for more work soon instead of at the next tick. */
  private kick(): void {
    this.unblock();
    if (!this.started || this.stopped) return;
    this.loop?.wake();
  }

  /** Stop claiming, wait (bounded) for sends in flight, then mark what is still running unknown. */
  async stop(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.stopped = true;
    // stops the timer now; resolves once the pass in flight is over
    const loopDone = this.loop?.stop();
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    const bound = opts.timeoutMs ?? 10_000;
    let timeout: NodeJS.Timeout | undefined;
    // In this order: the pass in flight may still claim and start sends; a send is in the gate only
    // while one of its calls is (between calls it reads documents, records outcomes), so an idle
    // gate alone once let a claimed send be marked unknown before its first call, which then
    // never went out, and a send the service never saw was parked as "cannot tell" for good.
    const idle = (async () => {
      await loopDone;
      await Promise.all([this.reconciling, this.polling, ...this.inFlight.values()]);
      await this.gate.onIdle();
      return true;
    })();
    const timedOut = new Promise<boolean>((resolve) => {
      timeout = setTimeout(() => resolve(false), bound);
    });
    // A queue paused by a 429 must still drain what it holds, or the wait would only time out.
    if (this.gate.isPaused) this.gate.start();
    const clean = await Promise.race([idle, timedOut]);
    clearTimeout(timeout);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = null;
    await this.ctx.holds.flush();
    const left = await this.ctx.store.releaseOwner(this.ctx.owner);
    if (!clean || left > 0)
      this.ctx.log.warn({ unknown: left }, "stopped with sends in flight; they will be reconciled at the next start");
    this.started = false;
  }

  /** One pass: claim and send all due work, reconcile unknowns, poll processing faxes. */
  async runOnce(): Promise<void> {
    this.stopped = false;
    await this.pass(true);
  }

  /** Resolves true when the pass did the housekeeping (expired leases, unknown sends). */
  private async pass(untilIdle: boolean): Promise<boolean> {
    const store = this.ctx.store;
    const work: Array<Promise<void>> = [];
    const tidy = untilIdle || performance.now() - this.lastHousekeeping >= HOUSEKEEPING_MS;
    if (tidy) {
      this.lastHousekeeping = performance.now();
      await store.releaseExpired();
      // One reconciliation and one status poll at a time; a pass does not start another.
      if (!this.reconciling) {
        // a fax it settles frees its number
        this.reconciling = reconcileUnknown(this.ctx)
          .then((looked) => (looked > 0 ? this.unblock() : undefined))
          .finally(() => (this.reconciling = null));
      }
    }
    if (this.reconciling) work.push(this.reconciling);
    // Claim while there is room in the gate (and, for runOnce, until nothing is due).
    for (;;) {
      if (this.stopped && !untilIdle) break;
      if (this.ctx.clock.now() < this.pausedUntil) break;
      let room = this.ctx.api.concurrency * 2 - (this.gate.size + this.gate.pending);
      // in a fleet, no more claimed than this gateway's share of the rate sends within a lease, so
      // a gateway killed leaves no claim behind that could not have gone out (issue 55)
      const fleet = this.ctx.fleet;
      if (fleet) room = Math.min(room, fleet.claimRoom(this.ctx.queue.lease) - this.inFlight.size);
      if (room <= 0) {
        if (!untilIdle) break;
        await this.gate.onSizeLessThan(this.ctx.api.concurrency);
        continue;
      }
      const blocked = new Set<string>();
      const unblocks = this.unblocks;
      const groups = await store.claimDue(this.ctx.owner, room, this.ctx.queue.lease, {
        perNumber: this.ctx.queue.perNumberConcurrency,
        // scheduled faxes stay in our queue until due (cancellable, and not holding their number's
        // one-in-flight slot at the service); queue.scheduleAhead hands them over earlier
        scheduleHorizonMs: this.ctx.queue.scheduleAhead,
        blocked,
      });
      if (groups.length === 0) {
        this.blocked = unblocks === this.unblocks ? blocked : null;
        break;
      }
      this.blocked = null;
      for (const g of groups) work.push(this.send(g));
    }
    // finished jobs past their time go by the retention rule (retention/), which sees legal holds
    const now = this.ctx.clock.now();
    if (untilIdle || now - this.lastPoll >= this.ctx.queue.pollInterval) {
      if (!this.polling) {
        this.lastPoll = now;
        this.polling = pollProcessing(this.ctx)
          .then((looked) => (looked > 0 ? this.unblock() : undefined))
          .finally(() => (this.polling = null));
      }
      work.push(this.polling);
    }
    if (untilIdle) await Promise.all(work);
    else void Promise.all(work).catch((err) => this.ctx.log.error({ err: describeError(err) }, "dispatch work failed"));
    return tidy;
  }

  private async send(group: ClaimedGroup): Promise<void> {
    const sending = sendGroup(this.ctx, group);
    this.inFlight.set(
      group,
      sending.catch(() => undefined),
    );
    try {
      await sending;
    } catch (err) {
      childLog(this.ctx.log, { job: group.job.id }).error({ err: describeError(err) }, "send failed unexpectedly");
    } finally {
      this.inFlight.delete(group);
      this.kick();
    }
  }

  private renewLeases(): void {
    const keys = [...this.inFlight.keys()].flatMap((g) => g.recipients.map((r) => ({ jobId: r.jobId, idx: r.idx })));
    if (keys.length === 0) return;
    this.ctx.store
      .extendLease(this.ctx.owner, keys, this.ctx.queue.lease)
      .catch((err: unknown) => this.ctx.log.error({ err: describeError(err) }, "could not renew send leases"));
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    // Checked when the call's turn comes: once stopping, calls still waiting are not made.
    return this.gate.add(() => {
      if (this.stopped && this.started)
        throw new FaxgateError("SHUTTING_DOWN", "the dispatcher is stopping", { temporary: true });
      return fn();
    }) as Promise<T>;
  }

  /** A 429 pauses every call for the time the service asked for. */
  private pause(ms: number): void {
    if (ms <= 0) return;
    const until = this.ctx.clock.now() + Math.max(0, ms);
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    this.gate.pause();
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    this.ctx.log.warn({ pauseMs: ms }, "the fax service asked us to slow down; pausing calls");
    this.resumeTimer = setTimeout(
      () => {
        this.resumeTimer = null;
        this.gate.start();
      },
      Math.max(0, ms),
    );
  }
}
