// Each console user's share of the calls that reach the fax service: at most `perMinute` in any
// minute and `atOnce` at the same time. Past it the user is answered 429 with Retry-After at once,
// instead of queueing calls in the process's one API gate where they would delay everyone else.
// Only calls that go out count: an answer from the contact cache costs nothing.
// Several gateways on one PostgreSQL count the minute's calls in the store (`shared`), so a fleet
// grants one share a minute, not N; the calls at once are each gateway's own (they end with the
// process that made them).
import type { Clock } from "../clock.js";
import { FaxgateError } from "../errors.js";
import type { WindowCounter } from "../fleet-counter.js";

export interface UserShareOptions {
  perMinute: number;
  atOnce: number;
  clock: Clock;
  /** the fleet's count of calls a minute; null: this process's own count */
  shared: WindowCounter | null;
}

/** A user is over their share; `retryAfterSeconds` goes into the answer's Retry-After. */
export class ShareExceededError extends FaxgateError {
  constructor(message: string, retryAfterSeconds: number) {
    super("CLIENT_LIMIT", message, { httpStatus: 429, retryAfterSeconds });
    this.name = "ShareExceededError";
  }
}

export class UserShare {
  private readonly calls = new Map<string, { times: number[]; out: number }>();

  constructor(private readonly opts: UserShareOptions) {}

  /**
   * Takes one call of `user`'s share (rejects with ShareExceededError when over); call the result
   * when the call is over.
   */
  async take(user: string): Promise<() => void> {
    const shared = this.opts.shared;
    if (!shared) return this.takeHere(user);
    const u = this.calls.get(user) ?? { times: [], out: 0 };
    this.calls.set(user, u);
    const limits = `at most ${this.opts.perMinute} a minute and ${this.opts.atOnce} at once`;
    if (u.out >= this.opts.atOnce)
      throw new ShareExceededError(
        `too many calls to the fax service from you at once (${limits}); try again in a second`,
        1,
      );
    // held while the fleet is asked, so parallel calls cannot all pass the at-once bound
    u.out += 1;
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      u.out -= 1;
    };
    try {
      const taken = await shared.take(user);
      if (taken.allowed) return release;
      const seconds = Math.max(1, Math.ceil(taken.resetMs / 1000));
      throw new ShareExceededError(
        `too many calls to the fax service from you in the last minute (${limits}); try again in ${seconds} s`,
        seconds,
      );
    } catch (err) {
      release();
      throw err;
    }
  }

  private takeHere(user: string): () => void {
    const now = this.opts.clock.now();
    let u = this.calls.get(user);
    if (!u) {
      u = { times: [], out: 0 };
      this.calls.set(user, u);
    }
    while (u.times.length > 0 && (u.times[0]! <= now - 60_000 || u.times[0]! > now)) u.times.shift();
    const limits = `at most ${this.opts.perMinute} a minute and ${this.opts.atOnce} at once`;
    if (u.out >= this.opts.atOnce) {
      throw new ShareExceededError(
        `too many calls to the fax service from you at once (${limits}); try again in a second`,
        1,
      );
    }
    if (u.times.length >= this.opts.perMinute) {
      const seconds = Math.max(1, Math.ceil((u.times[0]! + 60_000 - now) / 1000));
      throw new ShareExceededError(
        `too many calls to the fax service from you in the last minute (${limits}); try again in ${seconds} s`,
        seconds,
      );
    }
    u.times.push(now);
    u.out += 1;
    const entry = u;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      entry.out -= 1;
    };
  }
}
