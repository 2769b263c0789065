// Office conversions taken in turn per user (round robin), in front of the converter's few slots:
// one user's many slow documents never make another user's mail wait behind all of them, only
// behind the conversions already running. Each user may have at most `perUser` documents waiting
// or converting; past that their next one is refused at once as temporary (451 over SMTP, 429 in
// the console), before it costs anyone's slot. A document waiting longer than the converter's
// time limit is answered 451 CONVERTER_BUSY, as the converter itself would.
import { FaxgateError } from "../../errors.js";
import type { Logger } from "../../log/index.js";
import type { ConvertInput, OfficeConverter } from "./office-convert.js";

/** What intake needs of a converter: OfficeConverter itself, or this queue in front of it. */
export interface DocumentConverter {
  unavailableReason(name: string, ext: string): string | null;
  /** `user` names whose turn the conversion takes (the queue's round robin); the converter ignores it. */
  convert(input: ConvertInput & { user?: string }): Promise<Buffer>;
  close(): Promise<void>;
}

export interface ConvertQueueOptions {
  /** Documents of one user waiting or converting at once (default 3). */
  perUser?: number;
  logger?: Logger;
}

export const DEFAULT_QUEUE_PER_USER = 3;

/** A user has too many documents in the queue already; `retryAfterSeconds` for a console's Retry-After. */
export class UserQueueFullError extends FaxgateError {
  constructor(user: string, perUser: number, retryAfterSeconds: number) {
    super(
      "CONVERTER_BUSY",
      `${perUser} documents of ${user} are being converted already; send this one when they are done`,
      {
        temporary: true,
        httpStatus: 429,
        smtpReply: `451 4.7.1 ${perUser} office documents of ${user} are being converted already, please try again later`,
        retryAfterSeconds,
      },
    );
    this.name = "UserQueueFullError";
  }
}

interface Ticket {
  user: string;
  start: () => void;
}

export class ConvertQueue implements DocumentConverter {
  private readonly perUser: number;
  private readonly slots: number;
  private running = 0;
  /** Waiting tickets by user, users in the order they began to wait. */
  private readonly waiting = new Map<string, Ticket[]>();
  /** Documents per user waiting or converting. */
  private readonly held = new Map<string, number>();
  /** When each user holding documents was last given a slot (a count of turns, not a time). */
  private readonly lastServed = new Map<string, number>();
  private turns = 0;
  private closed = false;
  /** For tests and docs/faults.md: the users of the last conversions started, oldest first. */
  readonly started: string[] = [];

  constructor(
    private readonly converter: OfficeConverter,
    private readonly opts: ConvertQueueOptions = {},
  ) {
    this.perUser = opts.perUser ?? DEFAULT_QUEUE_PER_USER;
    this.slots = converter.options.concurrency;
  }

  unavailableReason(name: string, ext: string): string | null {
    return this.converter.unavailableReason(name, ext);
  }

  async convert(input: ConvertInput & { user?: string }): Promise<Buffer> {
    if (this.closed) throw shuttingDown();
    const user = input.user ?? "";
    const mine = this.held.get(user) ?? 0;
    if (mine >= this.perUser) {
      this.opts.logger?.info({ user, held: mine }, "CONVERT refused: the user has too many documents in the queue");
      throw new UserQueueFullError(
        user || "this sender",
        this.perUser,
        Math.max(1, Math.ceil(this.converter.options.timeoutMs / 1000 / 4)),
      );
    }
    this.held.set(user, mine + 1);
    try {
      const queuedAt = Date.now();
      await this.turn(user);
      this.lastServed.set(user, ++this.turns);
      this.started.push(user);
      if (this.started.length > 100) this.started.shift();
      this.opts.logger?.debug({ user, waitedMs: Date.now() - queuedAt }, "CONVERT started");
      try {
        const { user: _user, ...doc } = input;
        return await this.converter.convert(doc);
      } finally {
        this.running -= 1;
        this.next();
      }
    } finally {
      const left = (this.held.get(user) ?? 1) - 1;
      if (left > 0) this.held.set(user, left);
      else {
        this.held.delete(user);
        this.lastServed.delete(user);
      }
    }
  }

  /** Refuses what is waiting (shutdown); the converter's own close() ends what runs. */
  async close(): Promise<void> {
    this.closed = true;
    for (const tickets of this.waiting.values()) for (const t of tickets) t.start();
    this.waiting.clear();
  }

  /** Resolves when it is `user`'s turn and a slot is free (the slot is then taken). */
  private turn(user: string): Promise<void> {
    if (this.running < this.slots && this.waiting.size === 0) {
      this.running += 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const ticket: Ticket = {
        user,
        start: () => {
          clearTimeout(timer);
          if (this.closed) reject(shuttingDown());
          else resolve();
        },
      };
      // waiting is bounded by the converter's own time limit, as a wait for its slot was
      const timer = setTimeout(() => {
        this.drop(ticket);
        reject(
          new FaxgateError("CONVERTER_BUSY", "the document converter is busy; try again later", {
            temporary: true,
            smtpReply: "451 4.3.2 The office document converter is busy, please try again later",
          }),
        );
      }, this.converter.options.timeoutMs);
      const list = this.waiting.get(user);
      if (list) list.push(ticket);
      else this.waiting.set(user, [ticket]);
      this.opts.logger?.debug({ user, waiting: list?.length ?? 1 }, "CONVERT queued");
    });
  }

  /**
   * A slot came free: it goes to the waiting user served longest ago (one who has nothing
   * converting or converted lately first, then in the order they began to wait), so users take
   * turns whoever queued more.
   */
  private next(): void {
    while (this.running < this.slots && this.waiting.size > 0) {
      let user = "";
      let best = Infinity;
      for (const u of this.waiting.keys()) {
        const last = this.lastServed.get(u) ?? 0;
        if (last < best) {
          best = last;
          user = u;
        }
      }
      const list = this.waiting.get(user)!;
      const ticket = list.shift()!;
      if (list.length === 0) this.waiting.delete(user);
      this.running += 1;
      ticket.start();
    }
  }

  private drop(ticket: Ticket): void {
    const list = this.waiting.get(ticket.user);
    if (!list) return;
    const i = list.indexOf(ticket);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.waiting.delete(ticket.user);
  }
}

function shuttingDown(): FaxgateError {
  return new FaxgateError("SHUTTING_DOWN", "the gateway is shutting down; the document was not converted", {
    temporary: true,
  });
}
