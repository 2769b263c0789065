// "Do this now and then again every N ms, one run at a time": the loop of the notifier, the
// key watch, the dispatcher, the spool's sweep and rescan, and (as a Sweep) the inbound poller,
// the inbox escalation and the address expiry. A run started by the timer and one asked for by
// a caller (tests, --once) share the same promise; wake() brings the next timed run forward;
// stop() waits for the run in flight.
export interface PeriodicOptions {
  /** Pause between the end of one run and the start of the next. */
  intervalMs: number;
  /** Delay before the first run (default 0). */
  firstDelayMs?: number;
  /** A failed run is reported here; the loop goes on. */
  onError: (err: unknown) => void;
  /** Do not keep the process alive for this timer alone. */
  unref?: boolean;
  /** Called after every timed run, whatever its outcome (tests wait on it instead of sleeping). */
  onRunEnd?: () => void;
  /** wake() brings the next run no closer than this to the end of the last one (default 0). */
  wakeGapMs?: number;
}

export class Periodic<T> {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<T> | null = null;
  private halted = false;
  private started = false;
  private again = false;
  private lastEnd = Number.NEGATIVE_INFINITY;
  private wakePending = false;

  constructor(
    private readonly work: () => Promise<T>,
    private readonly opts: PeriodicOptions,
  ) {}

  /** True once stop() was called: long runs check it to end early. */
  get stopped(): boolean {
    return this.halted;
  }

  start(): void {
    if (this.started || this.halted) return;
    this.started = true;
    this.schedule(this.opts.firstDelayMs ?? 0);
  }

  /** Run as soon as possible: now when idle, or right after the run in flight. */
  wake(): void {
    if (!this.started || this.halted) return;
    // a timed run in flight (no timer pending): go again right after it
    if (this.running && !this.timer) {
      this.again = true;
      return;
    }
    // a wake while one is already pending soon changes nothing: many wakes, one run
    if (this.wakePending) return;
    this.wakePending = true;
    this.schedule(this.wakeDelay());
  }

  private wakeDelay(): number {
    return Math.max(0, this.lastEnd + (this.opts.wakeGapMs ?? 0) - performance.now());
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.again = false;
      this.wakePending = false;
      this.runOnce()
        .catch((err) => this.opts.onError(err))
        .finally(() => {
          this.lastEnd = performance.now();
          this.opts.onRunEnd?.();
          if (this.halted) return;
          if (this.again) {
            this.wakePending = true;
            this.schedule(this.wakeDelay());
          } else this.schedule(this.opts.intervalMs);
        });
    }, ms);
    if (this.opts.unref) this.timer.unref();
  }

  /** One run now, or the one already in flight. */
  runOnce(): Promise<T> {
    if (!this.running) this.running = this.work().finally(() => (this.running = null));
    return this.running;
  }

  async stop(): Promise<void> {
    this.halted = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }
}

/**
 * A part whose one job is a sweep now and then (inbox escalation, address expiry): the loop, its
 * start and stop, and runOnce for tests that drive the sweep with a manual clock.
 */
export abstract class Sweep<T> {
  private readonly loop: Periodic<T>;

  protected constructor(opts: PeriodicOptions) {
    this.loop = new Periodic(() => this.sweep(), opts);
  }

  /** One pass of the sweep. */
  protected abstract sweep(): Promise<T>;

  /** True once stop() was called: a long pass checks it to end early. */
  protected get stopped(): boolean {
    return this.loop.stopped;
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One sweep now, or the one already in flight. */
  runOnce(): Promise<T> {
    return this.loop.runOnce();
  }
}
