// The public MX port's strangers whose mail has not yet proven its sender share a few session
// slots (smtp.senderAuth.maxUnverifiedSessions); the others wait for their greeting, holding only a
// socket. One event loop serves every session in turn, so each session busy at once adds to every
// other's wait: fifty forgers talking at once made a real sender's mail several times slower,
// while fifty forgers queued at the greeting cost it nothing. An address whose mail passed the
// check lately skips the queue (Postfix's postscreen keeps such a list too); one whose mail was
// refused waits behind those never seen.

/** How long a client address stays known for (a pass or a refusal). */
const REMEMBER_MS = 24 * 60 * 60_000;
/** addresses remembered at most: rotating forgers cannot grow the lists without end */
const REMEMBER_MAX = 10_000;

export type Entry = "now" | "queued";

interface Waiter {
  sessionId: string;
  go: () => void;
}

export class UnverifiedSlots {
  private readonly holders = new Set<string>();
  /** never-seen addresses first, then those refused before */
  private readonly waiting: [Waiter[], Waiter[]] = [[], []];
  private readonly proven = new Map<string, number>();
  private readonly refused = new Map<string, number>();

  constructor(
    private readonly slots: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A stranger's session asks to be greeted: `go` runs at once (a proven address, or a free slot)
   * or when a slot frees; "queued" says it waits. `leave` must follow when the session closes.
   */
  enter(sessionId: string, client: string, go: () => void): Entry {
    const proven = this.known(this.proven, client);
    if (proven || this.holders.size < this.slots) {
      if (!proven) this.holders.add(sessionId);
      go();
      return "now";
    }
    this.waiting[this.known(this.refused, client) ? 1 : 0].push({ sessionId, go });
    return "queued";
  }

  /** The session closed (greeted or still waiting): its slot goes to the next in line. */
  leave(sessionId: string): void {
    for (const queue of this.waiting) {
      const i = queue.findIndex((w) => w.sessionId === sessionId);
      if (i >= 0) queue.splice(i, 1);
    }
    if (!this.holders.delete(sessionId)) return;
    const next = this.waiting[0].shift() ?? this.waiting[1].shift();
    if (!next) return;
    this.holders.add(next.sessionId);
    next.go();
  }

  /** Mail from `client` proved its sender: its next sessions skip the queue. */
  passed(client: string): void {
    this.refused.delete(client);
    this.remember(this.proven, client);
  }

  /** Mail from `client` was refused for good: its next sessions wait behind those never seen. */
  failed(client: string): void {
    if (!this.known(this.proven, client)) this.remember(this.refused, client);
  }

  /** Sessions waiting for a slot (for the tests and the log). */
  get queued(): number {
    return this.waiting[0].length + this.waiting[1].length;
  }

  private known(list: Map<string, number>, client: string): boolean {
    const until = list.get(client);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    list.delete(client);
    return false;
  }

  private remember(list: Map<string, number>, client: string): void {
    list.delete(client);
    if (list.size >= REMEMBER_MAX) list.delete(list.keys().next().value!);
    list.set(client, this.now() + REMEMBER_MS);
  }
}
