// PostgreSQL's ledger rows are committed unsealed with what they record (store/sql/ledger.ts) and
// sealed into the chain here, in batches, by whichever gateway gets the ledger's lock first: each
// gateway seals soon after its own commits (kick), and sweeps now and then for rows a gateway
// that died between its commit and its seal left behind. SQLite seals as it appends: nothing to do.
import { setTimeout as sleep } from "node:timers/promises";
import { type Db, LEDGER_SEAL_BATCH, ledgerPending, sealPending } from "../store/index.js";

/** How often a gateway looks for rows another left unsealed (a crash between commit and seal). */
export const SEAL_SWEEP_MS = 2000;

/**
 * How long a kick waits before its pass, so one seal takes the rows of many commits: a seal per
 * commit would double a busy gateway's transactions. A reader's sealNow does not wait it.
 */
export const SEAL_GATHER_MS = 50;

/** A row unsealed this long is reported by `audit verify` (no sealer has run: no gateway is up, or sealing fails). */
export const STALE_PENDING_MS = 60_000;

export class ChainSealer {
  private running: Promise<void> | null = null;
  private again = false;
  /** a reader waits: the next pass starts without gathering */
  private urgent = false;
  private sweep: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  /** True where rows wait to be sealed (PostgreSQL). */
  get deferred(): boolean {
    return this.db.dialect === "postgres";
  }

  /** Rows were committed unsealed: seal them soon (one pass at a time; a kick during one runs another). */
  kick(): void {
    if (!this.deferred) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.passes().finally(() => {
      this.running = null;
    });
  }

  /** Seals whatever is pending now, and waits for it (a reader that must see its own rows sealed). */
  async sealNow(): Promise<void> {
    if (!this.deferred) return;
    this.urgent = true;
    this.kick(); // a pass under way is told to run again: it may have read before the caller's commit
    await this.running;
  }

  /** The sweep for rows others left (the daemon only; a CLI seals through its reads). */
  start(): void {
    if (!this.deferred || this.sweep) return;
    this.kick();
    this.sweep = setInterval(() => this.kick(), SEAL_SWEEP_MS);
    this.sweep.unref();
  }

  /** Stops the sweep, after a last pass for this gateway's rows. */
  async stop(): Promise<void> {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
    await this.sealNow();
  }

  /** How many rows wait, and since when. */
  pending(): Promise<{ count: number; oldest: string | null }> {
    return ledgerPending(this.db);
  }

  private async passes(): Promise<void> {
    try {
      for (;;) {
        if (!this.urgent) await sleep(SEAL_GATHER_MS);
        this.urgent = false;
        this.again = false;
        const sealed = await this.db.tx("seal the ledger", (t) => sealPending(t));
        // a full batch leaves more; a kick meanwhile may have committed more after this pass read
        if (sealed < LEDGER_SEAL_BATCH && !this.again) return;
      }
    } catch (err) {
      // the rows stay pending, whole, for the next pass (the sweep, the next kick, another gateway)
      this.onError(err);
    }
  }
}
