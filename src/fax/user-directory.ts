// Each configured user's own view of the service (GET /v1/me with their key), cached.
// Notification preferences and the e-mail-to-fax cover option live there; a change made on
// the service takes effect here within `refreshMs`, without a restart. A failed refresh keeps
// the last good answer (stale preferences beat no notification at all).
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { FaxApi, User } from "./types.js";

export interface UserDirectoryOptions {
  clientFor: (user: string) => FaxApi;
  /** notify.preferenceRefresh */
  refreshMs: number;
  clock?: Clock;
}

interface Entry {
  user: User;
  fetchedAt: number;
}

export class UserDirectory {
  private readonly cache = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<User>>();
  private readonly clientFor: (user: string) => FaxApi;
  private readonly refreshMs: number;
  private readonly clock: Clock;

  constructor(opts: UserDirectoryOptions) {
    this.clientFor = opts.clientFor;
    this.refreshMs = opts.refreshMs;
    this.clock = opts.clock ?? systemClock;
  }

  /** The user's /v1/me record, at most `refreshMs` old (or the last good one if the service is down). */
  async get(user: string): Promise<User> {
    const hit = this.cache.get(user);
    if (hit && this.clock.now() - hit.fetchedAt < this.refreshMs) return hit.user;
    try {
      return await this.fetch(user);
    } catch (err) {
      if (hit) return hit.user;
      throw err;
    }
  }

  /** Forget everything (SIGHUP, key rotation). */
  invalidate(user?: string): void {
    if (user === undefined) this.cache.clear();
    else this.cache.delete(user);
  }

  private fetch(user: string): Promise<User> {
    let p = this.inflight.get(user);
    if (!p) {
      p = this.clientFor(user)
        .me()
        .then((me) => {
          this.cache.set(user, { user: me, fetchedAt: this.clock.now() });
          return me;
        })
        .finally(() => this.inflight.delete(user));
      this.inflight.set(user, p);
    }
    return p;
  }
}

/** Notification option as a known value; anything unknown counts as 'All' (callers log it once). */
export function notifyOption(value: string | undefined | null): { option: "All" | "Failure" | "None"; known: boolean } {
  const v = (value ?? "").trim().toLowerCase();
  if (v === "all") return { option: "All", known: true };
  if (v === "failure" || v === "failures") return { option: "Failure", known: true };
  if (v === "none") return { option: "None", known: true };
  return { option: "All", known: false };
}
