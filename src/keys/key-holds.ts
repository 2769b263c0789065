// Users whose API key the fax service refused (401/403). Their faxes are held, not failed: a
// revoked or mistyped key is the operator's to fix, and once a working key is loaded (SIGHUP or
// rotation) everything goes out. Kept in the store's state table so that `faxgate status`,
// `doctor` and /metrics (other processes, or other parts of this one) can show it.
import type { QueueStore } from '../store/types.js';

export interface KeyHold {
  user: string;
  since: string;
  reason: string;
}

const PREFIX = 'key-hold:';

/** The hold recorded for `user`, or null (a released hold is stored as an empty value). */
export function readKeyHold(store: Pick<QueueStore, 'getState'>, user: string): KeyHold | null {
  const raw = store.getState(PREFIX + user);
  if (!raw) return null;
  try {
    const h = JSON.parse(raw) as KeyHold;
    return typeof h.since === 'string' ? { user, since: h.since, reason: String(h.reason ?? '') } : null;
  } catch {
    return null;
  }
}

/** Holds of the given users (the configured ones: the store does not list its state keys). */
export function listKeyHolds(store: Pick<QueueStore, 'getState'>, users: readonly string[]): KeyHold[] {
  return users.map((u) => readKeyHold(store, u)).filter((h): h is KeyHold => h !== null);
}

export class KeyHolds {
  private readonly held = new Map<string, KeyHold>();

  constructor(private readonly store: Pick<QueueStore, 'getState' | 'setState'>) {}

  /** Records a hold; true when it is new (the caller then logs loudly and tells the admin). */
  hold(user: string, reason: string, at: Date): boolean {
    if (this.isHeld(user)) return false;
    const h = { user, since: at.toISOString(), reason };
    this.held.set(user, h);
    this.store.setState(PREFIX + user, JSON.stringify({ since: h.since, reason }));
    return true;
  }

  isHeld(user: string): boolean {
    return this.held.has(user) || readKeyHold(this.store, user) !== null;
  }

  get(user: string): KeyHold | null {
    return this.held.get(user) ?? readKeyHold(this.store, user);
  }

  /** Ends a hold; true when there was one. */
  release(user: string): boolean {
    const was = this.isHeld(user);
    this.held.delete(user);
    if (was) this.store.setState(PREFIX + user, '');
    return was;
  }

  users(): string[] {
    return [...this.held.keys()];
  }
}
