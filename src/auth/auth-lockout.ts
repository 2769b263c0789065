// Bounds password guessing: per session (a few tries, then the connection is closed) and per
// client address over all its sessions (then AUTH is refused outright for a while). An attempt is
// counted *before* its password is checked and given back only if it succeeds, so 40 parallel
// attempts from one address cannot all reach the (scrypt) check: the limit holds under a race.
// Several gateways on one PostgreSQL count in the store (fleet-counter.ts), so N gateways grant
// the same number of guesses as one, not N times it.
import type { Clock } from "../clock.js";
import type { FleetCounters, WindowCounter } from "../fleet-counter.js";

export const MAX_SESSION_AUTH_FAILURES = 3;
export const MAX_CLIENT_AUTH_FAILURES = 10;
export const CLIENT_WINDOW_MS = 15 * 60_000;
const MAX_TRACKED_CLIENTS = 10_000;

interface Entry {
  count: number;
  since: number;
}

/** One attempt under way: settle it with `succeeded()` or `failed()`. */
export interface AuthAttempt {
  /** The login was right: the attempt is not counted against the address. */
  succeeded(): Promise<void>;
  /** Failures of this address within the window, this one included. */
  failed(): number;
}

export class AuthLockout {
  private readonly byClient = new Map<string, Entry>();
  private readonly shared: WindowCounter | null;

  /**
   * `name`: what the fleet's counter is called (one per lockout); `max`: failures within the
   * window before `begin` answers null.
   */
  constructor(
    private readonly clock: Clock,
    counters: FleetCounters,
    name: string,
    private readonly max = MAX_CLIENT_AUTH_FAILURES,
  ) {
    this.shared = counters(`lockout:${name}`, max, CLIENT_WINDOW_MS);
  }

  /** Counts an attempt from `client`, or answers null when the address is locked out. */
  async begin(client: string): Promise<AuthAttempt | null> {
    if (this.shared) return this.beginShared(this.shared, client);
    const entry = this.current(client) ?? { count: 0, since: this.clock.now() };
    if (entry.count >= this.max) return null;
    entry.count += 1;
    this.touch(client, entry);
    let settled = false;
    return {
      succeeded: async () => {
        if (settled) return;
        settled = true;
        const e = this.byClient.get(client);
        if (e === entry) {
          e.count -= 1;
          if (e.count <= 0) this.byClient.delete(client);
        }
      },
      failed: () => {
        settled = true;
        return entry.count;
      },
    };
  }

  /** The fleet's count: taken in the store, given back there on success. */
  private async beginShared(shared: WindowCounter, client: string): Promise<AuthAttempt | null> {
    const taken = await shared.take(client);
    if (!taken.allowed) return null;
    let settled = false;
    return {
      succeeded: async () => {
        if (settled) return;
        settled = true;
        await shared.giveBack(client);
      },
      failed: () => {
        settled = true;
        return taken.count;
      },
    };
  }

  /** Failures (and attempts under way) from this address within the window (this process's count). */
  count(client: string): number {
    return this.current(client)?.count ?? 0;
  }

  private current(client: string): Entry | undefined {
    const entry = this.byClient.get(client);
    if (entry && this.clock.now() - entry.since > CLIENT_WINDOW_MS) {
      this.byClient.delete(client);
      return undefined;
    }
    return entry;
  }

  private touch(client: string, entry: Entry): void {
    this.byClient.delete(client);
    this.byClient.set(client, entry);
    // bounded memory under a spread-out attack: the oldest addresses are forgotten first
    while (this.byClient.size > MAX_TRACKED_CLIENTS) this.byClient.delete(this.byClient.keys().next().value!);
  }
}
