// "Do this now and then again every N ms, one run at a time": the loop of the notifier, the
// inbound poller and the key watch. A run started by the timer and one asked for by a caller
// (tests, --once) share the same promise; stop() waits for the run in flight.
export interface PeriodicOptions {
  /** Pause between the end of one run and the start of the next. */
  intervalMs: number;
  /** Delay before the first run (default 0). */
  firstDelayMs?: number;
  /** A failed run is reported here; the loop goes on. */
  onError: (err: unknown) => void;
  /** Do not keep the process alive for this timer alone. */
  unref?: boolean;
}

export class Periodic<T> {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<T> | null = null;
  private halted = false;

  constructor(private readonly work: () => Promise<T>, private readonly opts: PeriodicOptions) {}

  /** True once stop() was called: long runs check it to end early. */
  get stopped(): boolean {
    return this.halted;
  }

  start(): void {
    if (this.timer || this.halted) return;
    this.schedule(this.opts.firstDelayMs ?? 0);
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.runOnce()
        .catch((err) => this.opts.onError(err))
        .finally(() => {
          if (!this.halted) this.schedule(this.opts.intervalMs);
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
