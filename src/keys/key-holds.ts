// Users whose API key the fax service refused (401/403). Their faxes are held, not failed: a
// revoked or mistyped key is the operator's to fix, and once a working key is loaded (SIGHUP or
// rotation) everything goes out. Kept in the store's state table so that `faxgate status`,
// `doctor` and /metrics (other processes, or other parts of this one) can show it.
import type { QueueStore } from "../store/index.js";

export interface KeyHold {
  user: string;
  since: string;
  reason: string;
}

const PREFIX = "key-hold:";

/** The hold recorded for `user`, or null (a released hold is stored as an empty value). */
export async function readKeyHold(store: Pick<QueueStore, "getState">, user: string): Promise<KeyHold | null> {
  return parseHold(user, await store.getState(PREFIX + user));
}

function parseHold(user: string, raw: string | null): KeyHold | null {
  if (!raw) return null;
  try {
    const h = JSON.parse(raw) as KeyHold;
    return typeof h.since === "string" ? { user, since: h.since, reason: String(h.reason ?? "") } : null;
  } catch {
    return null;
  }
}

/** Holds of the given users (the configured ones: the store does not list its state keys). */
export async function listKeyHolds(store: Pick<QueueStore, "getState">, users: readonly string[]): Promise<KeyHold[]> {
  const holds = await Promise.all(users.map((u) => readKeyHold(store, u)));
  return holds.filter((h): h is KeyHold => h !== null);
}

/**
 * This process's view of the holds: answered from memory (a send asks before every call), loaded
 * from the store at start and on each reload (`load`), written through to the store in order.
 */
export class KeyHolds {
  private readonly held = new Map<string, KeyHold>();
  /** Writes to the store, one after another, so a hold and its release land in that order. */
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Pick<QueueStore, "getState" | "setState">,
    private readonly onWriteError: (err: unknown) => void = () => undefined,
  ) {}

  /** Reads the holds an earlier run (or another part of this one) left in the store for these users. */
  async load(users: readonly string[]): Promise<void> {
    for (const h of await listKeyHolds(this.store, users)) if (!this.held.has(h.user)) this.held.set(h.user, h);
  }

  /** Records a hold; true when it is new (the caller then logs loudly and tells the admin). */
  hold(user: string, reason: string, at: Date): boolean {
    if (this.isHeld(user)) return false;
    const h = { user, since: at.toISOString(), reason };
    this.held.set(user, h);
    this.write(PREFIX + user, JSON.stringify({ since: h.since, reason }));
    return true;
  }

  isHeld(user: string): boolean {
    return this.held.has(user);
  }

  get(user: string): KeyHold | null {
    return this.held.get(user) ?? null;
  }

  /** Ends a hold; true when there was one. */
  release(user: string): boolean {
    const was = this.held.delete(user);
    if (was) this.write(PREFIX + user, "");
    return was;
  }

  users(): string[] {
    return [...this.held.keys()];
  }

  /** Resolves once every hold and release so far is in the store. */
  flush(): Promise<void> {
    return this.writes;
  }

  private write(key: string, value: string): void {
    this.writes = this.writes.then(() => this.store.setState(key, value)).catch(this.onWriteError);
  }
}
