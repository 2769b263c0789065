// One fax account's budget shared by every gateway on one PostgreSQL store (issue 55): the rate
// as two shared slot clocks (the dispatcher's reserved lane and the others'), the pace a 429 cuts,
// the window a 429 closes, the history calls of the last minute, and the gateways alive, from
// which each takes its share of the concurrency and of following faxes in progress.
//
// Why slots and not leased slices of the rate: a gateway asks for as many slots as it has calls
// waiting (a batch, at most LOOKAHEAD_MS ahead), and the row hands out the next free times of one
// clock for the whole fleet (GCRA: calls evenly spaced at the rate), so the sum over all gateways is the configured rate at any moment,
// busy gateways get what idle ones leave without any re-balancing, and a 429 seen by one moves
// the clock for all (the others meet it at their next batch, at most LOOKAHEAD_MS later). The
// cost is one short transaction per batch, not per call (docs/ha.md, "What the fleet shares").
// Times are the database's clock (clock_timestamp), so the gateways' clocks need not agree.
import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../../errors.js";
import type { Logger } from "../../log/index.js";
import type { Db, Runner } from "./db.js";

/** Slots are handed out at most this far ahead of the database's now. */
export const LOOKAHEAD_MS = 500;
/** A gateway is in the fleet while it renews its row this often, for MEMBER_TTL_MS each time. */
export const HEARTBEAT_MS = 1000;
export const MEMBER_TTL_MS = 3000;
/** The service's history minute, and 2 s more (as the per-process gate: fax/api-gate.ts). */
const HISTORY_WINDOW_MS = 62_000;
const MIN_PACE = 1 / 16;
const PACE_STEP = 0.1;
const PACE_HOLD_MS = 1000;
/** A batch that failed (the store away) is asked for again after this long. */
const RETRY_MS = 500;

export type FleetLane = "dispatch" | "others";

export interface FleetBudgetOptions {
  db: Db;
  /** This gateway's name in the fleet (the dispatcher's lease owner). */
  gateway: string;
  /** The fax account the budget is for (/v1/me accountId); asked once, retried until it answers. */
  account: () => Promise<string>;
  ratePerSecond: number;
  dispatchShare: number;
  concurrency: number;
  historyPerMinute: number;
  logger: Logger;
  /**
   * A passer-by (a CLI command): takes slots of the "others" lane and meets the fleet's 429s and
   * history budget, but never joins (no heartbeat), follows no faxes and has one call out at a
   * time, so a short command does not reshuffle the gateways' shares as it comes and goes.
   */
  visitor?: boolean;
}

const DB_NOW = "(extract(epoch from clock_timestamp()) * 1000)::float8";

interface BudgetRow {
  now: number;
  next_at: number;
  others_next_at: number;
  pace: number;
  paced_at: number;
  closed_until: number;
  history_calls: string;
  history_closed_until: number;
}

export class FleetBudget {
  private accountId: string | null = null;
  private accountAsked: Promise<string> | null = null;
  private readonly waiting: Record<FleetLane, Array<{ wake: () => void; fail: (err: unknown) => void }>> = {
    dispatch: [],
    others: [],
  };
  private readonly fetching: Record<FleetLane, boolean> = { dispatch: false, others: false };
  private members: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** The database's clock less ours, from the last answer (history times are kept in ours). */
  private skew = 0;
  private historyCalls: number[] = [];
  private historyClosedUntil = 0;
  private pace = 1;
  private storeTroubleLogged = false;
  /** Writes made in the background (a 429, a refused history call), awaited by stop(). */
  private readonly writes = new Set<Promise<unknown>>();
  /** Counted for tests and /metrics: batches asked for, and slots they gave. */
  batches = 0;
  slotsTaken = 0;

  constructor(private readonly opts: FleetBudgetOptions) {
    if (opts.db.dialect !== "postgres") throw new Error("the fleet budget is for a PostgreSQL store");
  }

  /** Joins the fleet (first heartbeat) and keeps renewing; resolves once this gateway's share is known. */
  async start(): Promise<void> {
    if (this.opts.visitor) throw new Error("a visitor of the fleet's budget does not join it");
    this.stopped = false;
    // a service or store that does not answer yet must not hold the gateway's start: the share
    // is known at the first heartbeat that gets through (calls wait for it meanwhile)
    await Promise.race([this.heartbeat().catch((err: unknown) => this.storeTrouble(err)), sleep(5000)]);
    this.timer = setInterval(() => {
      this.heartbeat().catch((err: unknown) => this.storeTrouble(err));
    }, HEARTBEAT_MS);
    this.timer.unref();
  }

  /** Leaves the fleet at once, so the others take its share without waiting for its row to run out. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // a 429 met just before the end is written for the fleet before the store is closed
    await Promise.all([...this.writes]);
    if (this.opts.visitor) return;
    await this.opts.db.run("DELETE FROM fleet_members WHERE gateway = ?", [this.opts.gateway]).catch(() => undefined);
  }

  /** The gateways alive on the store for this account (this one included, once it joined). */
  fleetSize(): number {
    return Math.max(1, this.members.length);
  }

  /** This gateway's place among them (0-based; 0 until it joined). */
  private rank(): number {
    return Math.max(0, this.members.indexOf(this.opts.gateway));
  }

  /** This gateway's part of api.concurrency: the fleet's calls out at once never add up to more. */
  concurrencyShare(): number {
    if (this.opts.visitor) return 1;
    const n = this.fleetSize();
    const c = this.opts.concurrency;
    return Math.floor(c / n) + (this.rank() < c % n ? 1 : 0);
  }

  /** Whether this gateway follows the faxes of `key` (a user): each key has one gateway at a time. */
  owns(key: string): boolean {
    if (this.opts.visitor) return false;
    return hash(key) % this.fleetSize() === this.rank();
  }

  /** Sends this gateway may claim so that all of them can go out within `leaseMs` at its share of the rate. */
  claimRoom(leaseMs: number): number {
    const perSecond = (this.opts.ratePerSecond * this.pace) / this.fleetSize();
    return Math.max(1, Math.floor((perSecond * leaseMs) / 1000));
  }

  /** Resolves when the fleet lets one call of `lane` go out. */
  slot(lane: FleetLane): Promise<void> {
    return new Promise<void>((wake, fail) => {
      this.waiting[lane].push({ wake, fail });
      this.pump(lane);
    });
  }

  private pump(lane: FleetLane): void {
    if (this.fetching[lane] || this.waiting[lane].length === 0) return;
    this.fetching[lane] = true;
    void this.takeSlots(lane, this.waiting[lane].length).then(
      (offsets) => {
        this.storeTroubleLogged = false;
        for (const ms of offsets) {
          const w = this.waiting[lane].shift();
          if (!w) break;
          if (ms <= 0) w.wake();
          else setTimeout(w.wake, ms);
        }
        // the next batch once the last slot is within the look-ahead: never more than that held
        const last = offsets[offsets.length - 1] ?? 0;
        setTimeout(
          () => {
            this.fetching[lane] = false;
            this.pump(lane);
          },
          Math.max(0, last - LOOKAHEAD_MS),
        );
      },
      (err: unknown) => {
        // a command cannot wait for the store or the service the way a daemon does: its calls fail
        if (this.opts.visitor) {
          this.fetching[lane] = false;
          for (const w of this.waiting[lane].splice(0)) w.fail(err);
          return;
        }
        this.storeTrouble(err);
        setTimeout(() => {
          this.fetching[lane] = false;
          this.pump(lane);
        }, RETRY_MS);
      },
    );
  }

  /** Up to `want` slots of `lane`, as milliseconds from now (one transaction). */
  private async takeSlots(lane: FleetLane, want: number): Promise<number[]> {
    const account = await this.account();
    const { ratePerSecond } = this.opts;
    const share = Math.min(0.9, Math.max(0.05, this.opts.dispatchShare));
    return this.opts.db.tx("take the fleet's API slots", async (t) => {
      const b = await this.row(t, account);
      const now = b.now;
      let pace = b.pace;
      let pacedAt = b.paced_at;
      // a calm second since the last change gives back a tenth of the rate (as the gate does)
      if (pace < 1 && now - pacedAt >= PACE_HOLD_MS) {
        pace = Math.min(1, pace + PACE_STEP);
        pacedAt = now;
      }
      // one clock for every call (evenly spaced at the rate), and one the others must also keep
      // to (their part of it), so the dispatcher's reserved share holds across the fleet and it
      // takes all of the rate while nobody else calls
      const spacing = 1000 / (ratePerSecond * pace);
      const start = Math.max(now, b.closed_until);
      let all = b.next_at;
      let others = b.others_next_at;
      const out: number[] = [];
      while (out.length < want) {
        const at = Math.max(start, all, lane === "others" ? others : 0);
        all = at + spacing;
        if (lane === "others") others = at + spacing / (1 - share);
        out.push(at - now);
        if (at - now >= LOOKAHEAD_MS) break;
      }
      await t.run("UPDATE fleet_budget SET next_at = ?, others_next_at = ?, pace = ?, paced_at = ? WHERE account = ?", [
        all,
        others,
        pace,
        pacedAt,
        account,
      ]);
      this.pace = pace;
      this.batches += 1;
      this.slotsTaken += out.length;
      return out;
    });
  }

  /**
   * A 429 on a call: no call of the fleet before its Retry-After, and the pace halved (once a
   * second, down to a sixteenth), written where every gateway takes its next slots.
   */
  rateLimited(retryAfterMs: number | undefined): void {
    this.background(
      this.account()
        .then((account) =>
          this.opts.db.tx("close the fleet's API window", async (t) => {
            const b = await this.row(t, account);
            const closed = Math.max(b.closed_until, b.now + Math.max(0, retryAfterMs ?? 0));
            const halve = b.now - b.paced_at >= PACE_HOLD_MS && b.pace > MIN_PACE;
            const pace = halve ? Math.max(MIN_PACE, b.pace / 2) : b.pace;
            await t.run("UPDATE fleet_budget SET closed_until = ?, pace = ?, paced_at = ? WHERE account = ?", [
              closed,
              pace,
              halve ? b.now : b.paced_at,
              account,
            ]);
            this.pace = pace;
          }),
        )
        .catch((err: unknown) => this.storeTrouble(err)),
    );
  }

  /** 0 when a history call may go out now (and it is counted), else how long to wait. */
  async historySlot(): Promise<number> {
    const account = await this.account();
    return this.opts.db.tx("take a history call of the fleet", async (t) => {
      const b = await this.row(t, account);
      const calls = recent(b.history_calls, b.now);
      let wait = b.history_closed_until - b.now;
      if (wait <= 0 && calls.length >= this.opts.historyPerMinute) wait = calls[0]! + HISTORY_WINDOW_MS - b.now;
      if (wait <= 0) {
        calls.push(b.now);
        await t.run("UPDATE fleet_budget SET history_calls = ? WHERE account = ?", [JSON.stringify(calls), account]);
      }
      this.noteHistory(calls, b.history_closed_until, b.now);
      return Math.max(0, wait);
    });
  }

  /** Whether a history call could go out now, with more than `reserve` of the budget left (as last seen). */
  historyAvailable(reserve: number): boolean {
    const now = Date.now();
    if (this.historyClosedUntil > now) return false;
    const used = this.historyCalls.filter((t) => t > now - HISTORY_WINDOW_MS).length;
    const limit = this.opts.historyPerMinute;
    return used < limit - Math.min(reserve, limit - 1);
  }

  /** The service refused a history call: closed for the fleet for the returned milliseconds. */
  historyLimited(retryAfterMs: number | undefined): number {
    const now = Date.now();
    const oldest = this.historyCalls.find((t) => t > now - HISTORY_WINDOW_MS) ?? now;
    const wait = retryAfterMs ?? Math.max(1000, oldest + HISTORY_WINDOW_MS - now);
    this.historyClosedUntil = Math.max(this.historyClosedUntil, now + wait);
    this.background(
      this.account()
        .then((account) =>
          this.opts.db.run(
            `UPDATE fleet_budget SET history_closed_until = GREATEST(history_closed_until, ${DB_NOW} + ?) WHERE account = ?`,
            [wait, account],
          ),
        )
        .catch((err: unknown) => this.storeTrouble(err)),
    );
    return wait;
  }

  private background(write: Promise<unknown>): void {
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped) return;
    const account = await this.account();
    const db = this.opts.db;
    await db.run(
      `INSERT INTO fleet_members (gateway, account, seen_until, busy) VALUES (?, ?, ${DB_NOW} + ?, 0)
       ON CONFLICT (gateway) DO UPDATE SET seen_until = excluded.seen_until, account = excluded.account`,
      [this.opts.gateway, account, MEMBER_TTL_MS],
    );
    const rows = await db.all<{ gateway: string }>(
      `SELECT gateway FROM fleet_members WHERE account = ? AND seen_until > ${DB_NOW} ORDER BY gateway`,
      [account],
    );
    const before = this.members.length;
    this.members = rows.map((r) => r.gateway);
    if (before !== this.members.length)
      this.opts.logger.info({ gateways: this.members.length }, "the fleet on this store changed size");
    const b = await db.get<BudgetRow>(
      `SELECT ${DB_NOW} AS now, pace, history_calls, history_closed_until FROM fleet_budget WHERE account = ?`,
      [account],
    );
    if (b) {
      this.pace = b.pace;
      this.noteHistory(recent(b.history_calls, b.now), b.history_closed_until, b.now);
    }
    // rows of gateways gone for a minute are no use to anyone
    await db.run(`DELETE FROM fleet_members WHERE seen_until < ${DB_NOW} - 60000`);
  }

  /** The account's row, locked for this transaction (made on first use). */
  private async row(t: Runner, account: string): Promise<BudgetRow> {
    const select = `SELECT ${DB_NOW} AS now, next_at, others_next_at, pace, paced_at, closed_until,
      history_calls, history_closed_until FROM fleet_budget WHERE account = ? FOR UPDATE`;
    let b = await t.get<BudgetRow>(select, [account]);
    if (!b) {
      await t.run("INSERT INTO fleet_budget (account) VALUES (?) ON CONFLICT (account) DO NOTHING", [account]);
      b = await t.get<BudgetRow>(select, [account]);
    }
    return b!;
  }

  private noteHistory(calls: number[], closedUntil: number, dbNow: number): void {
    this.skew = dbNow - Date.now();
    this.historyCalls = calls.map((t) => t - this.skew);
    this.historyClosedUntil = closedUntil - this.skew;
  }

  private account(): Promise<string> {
    if (this.accountId) return Promise.resolve(this.accountId);
    this.accountAsked ??= (async () => {
      for (let tries = 0; ; tries++) {
        try {
          this.accountId = await this.opts.account();
          return this.accountId;
        } catch (err) {
          if (this.opts.visitor) {
            this.accountAsked = null;
            throw err;
          }
          if (tries === 0)
            this.opts.logger.warn(
              { err: describeError(err) },
              "cannot learn the fax account for the fleet's budget yet; no call goes out until it is known",
            );
          await sleep(Math.min(10_000, 500 * 2 ** tries));
        }
      }
    })();
    return this.accountAsked;
  }

  private storeTrouble(err: unknown): void {
    if (this.storeTroubleLogged) return;
    this.storeTroubleLogged = true;
    this.opts.logger.warn(
      { err: describeError(err) },
      "cannot reach the fleet's budget in the store; calls wait for it",
    );
  }
}

/** The history call times of the last window, oldest first. */
function recent(json: string, now: number): number[] {
  const list = (JSON.parse(json) as number[]).filter((t) => t > now - HISTORY_WINDOW_MS);
  return list.sort((a, b) => a - b);
}

/** FNV-1a: the same key lands on the same gateway in every process. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The account the gateways alive on this store spend, when they all spend one (a CLI command
 * takes it rather than asking the service: that call would be outside the budget); null when
 * none is alive or they spend several.
 */
export async function liveFleetAccount(db: Db): Promise<string | null> {
  const rows = await db.all<{ account: string }>(
    `SELECT DISTINCT account FROM fleet_members WHERE seen_until > ${DB_NOW}`,
  );
  return rows.length === 1 ? rows[0]!.account : null;
}
