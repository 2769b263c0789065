// The public MX port's strangers whose mail has not yet proven its sender share a few session
// slots (smtp.senderAuth.maxUnverifiedSessions); the others wait for their greeting, holding only a
// socket. One event loop serves every session in turn, so each session busy at once adds to every
// other's wait: fifty forgers talking at once made a real sender's mail several times slower,
// while fifty forgers queued at the greeting cost it nothing. An address whose mail passed the
// check lately skips the queue (Postfix's postscreen keeps such a list too); one whose mail was
// refused waits behind those never seen. Within each, networks (/24, /64) take turns, so a flood
// from a few networks holds a new address of a hosted mail service back by a turn, not the flood.
import { plainAddress } from "../../auth/index.js";

/** How long a client address stays known for (a pass or a refusal). */
const REMEMBER_MS = 24 * 60 * 60_000;
/** addresses remembered at most: rotating forgers cannot grow the lists without end */
const REMEMBER_MAX = 10_000;

export type Entry = "now" | "queued";

interface Waiter {
  sessionId: string;
  go: () => void;
}

/** The network a client address is counted in: its /24 (IPv4) or /64 (IPv6). */
export function networkOf(client: string): string {
  const { address, family } = plainAddress(client);
  if (family === "ipv4") return address.split(".").slice(0, 3).join(".");
  // the first four groups of the address written out in full ("2001:db8::1" has them after "::")
  const [head = "", tail] = address.toLowerCase().split("::");
  const groups = head ? head.split(":") : [];
  if (tail !== undefined) {
    const rest = tail ? tail.split(":") : [];
    groups.push(...Array<string>(Math.max(0, 8 - groups.length - rest.length)).fill("0"), ...rest);
  }
  return groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":");
}

/** Waiting sessions by network; the networks take turns (a Map keeps the order they came in). */
class TurnQueue {
  private readonly byNetwork = new Map<string, Waiter[]>();
  private readonly networkOfSession = new Map<string, string>();

  get size(): number {
    return this.networkOfSession.size;
  }

  push(network: string, w: Waiter): void {
    const list = this.byNetwork.get(network);
    if (list) list.push(w);
    else this.byNetwork.set(network, [w]);
    this.networkOfSession.set(w.sessionId, network);
  }

  /** The first waiter of the network whose turn it is; that network goes to the back of the line. */
  shift(): Waiter | undefined {
    const first = this.byNetwork.entries().next();
    if (first.done) return undefined;
    const [network, list] = first.value;
    const w = list.shift()!;
    this.byNetwork.delete(network);
    if (list.length) this.byNetwork.set(network, list);
    this.networkOfSession.delete(w.sessionId);
    return w;
  }

  remove(sessionId: string): void {
    const network = this.networkOfSession.get(sessionId);
    if (network === undefined) return;
    this.networkOfSession.delete(sessionId);
    const list = this.byNetwork.get(network)!;
    list.splice(
      list.findIndex((w) => w.sessionId === sessionId),
      1,
    );
    if (list.length === 0) this.byNetwork.delete(network);
  }
}

export class UnverifiedSlots {
  private readonly holders = new Set<string>();
  /** never-seen addresses first, then those refused before */
  private readonly waiting: [TurnQueue, TurnQueue] = [new TurnQueue(), new TurnQueue()];
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
    this.waiting[this.known(this.refused, client) ? 1 : 0].push(networkOf(client), { sessionId, go });
    return "queued";
  }

  /** The session closed (greeted or still waiting): its slot goes to the next in line. */
  leave(sessionId: string): void {
    for (const queue of this.waiting) queue.remove(sessionId);
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
    return this.waiting[0].size + this.waiting[1].size;
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
