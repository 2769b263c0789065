// The LDAP source's sync: read the directory whole, and apply the result only when it is
// believable. A failed read keeps the last good list (the gateway is never emptied by an outage),
// and so does a read that would remove more than `maxDrop` of the people at once (a wrong filter,
// an OU moved, a bind account that lost its rights all look like "everyone left"): an operator
// applies such a drop with `faxgate directory sync --accept-drop`. The last good list is kept in
// the store, so a restart during an outage, and every gateway of a fleet, start from it.
import type { Clock } from "../clock.js";
import { describeError, FaxgateError } from "../errors.js";
import type { Ledger, LedgerDoor } from "../ledger/index.js";
import type { Logger } from "../log/index.js";
import type { DirectoryPerson, DirectorySource } from "./person.js";

/** What the store must give: its small key/value state. */
export interface StateStore {
  getState(key: string): Promise<string | null>;
  setState(key: string, value: string): Promise<void>;
}

export const LDAP_LIST_KEY = "directory:ldap:people";

/** The last good list as stored. */
interface StoredList {
  at: string;
  people: DirectoryPerson[];
}

export interface SyncStatus {
  /** the last sync's time and whether it was applied */
  lastAttempt: string | null;
  lastGood: string | null;
  ok: boolean;
  /** why the last sync was not applied (the error, or the drop it refused) */
  problem: string | null;
  people: number;
}

export interface SyncOutcome {
  applied: boolean;
  people: number;
  added: number;
  removed: number;
  groups: number;
  skipped: Array<{ id: string; reason: string }>;
  problem?: string;
}

export interface DirectorySyncOptions {
  source: DirectorySource;
  store: StateStore;
  ledger: Ledger;
  clock: Clock;
  logger: Logger;
  /** the largest share of people one sync may remove without an operator */
  maxDrop: number;
  /** where a run is recorded from: the daemon's timer (gateway) or `faxgate directory sync` (cli) */
  door: LedgerDoor;
}

export class DirectorySync {
  private list: DirectoryPerson[] = [];
  private status: SyncStatus = { lastAttempt: null, lastGood: null, ok: true, problem: null, people: 0 };
  private running: Promise<SyncOutcome> | null = null;

  constructor(private readonly opts: DirectorySyncOptions) {}

  /** The people of the last good sync. */
  people(): readonly DirectoryPerson[] {
    return this.list;
  }

  state(): SyncStatus {
    return { ...this.status };
  }

  /** The last good list as the store has it (written by this or another gateway, or the CLI). */
  async loadStored(): Promise<boolean> {
    const raw = await this.opts.store.getState(LDAP_LIST_KEY);
    if (!raw) return false;
    const stored = JSON.parse(raw) as StoredList;
    this.list = stored.people;
    this.status = { ...this.status, lastGood: stored.at, people: stored.people.length };
    return true;
  }

  /** One sync; calls made while one runs share it. Never throws: the outcome says what happened. */
  sync(opts: { acceptDrop?: boolean; by?: string } = {}): Promise<SyncOutcome> {
    if (!this.running) this.running = this.run(opts).finally(() => (this.running = null));
    return this.running;
  }

  private async run(opts: { acceptDrop?: boolean; by?: string }): Promise<SyncOutcome> {
    const { source, clock, logger } = this.opts;
    const at = new Date(clock.now()).toISOString();
    this.status.lastAttempt = at;
    let outcome: SyncOutcome;
    try {
      const read = await source.read();
      const before = new Set(this.list.map((p) => p.id));
      const after = new Set(read.people.map((p) => p.id));
      const removed = [...before].filter((id) => !after.has(id)).length;
      const added = [...after].filter((id) => !before.has(id)).length;
      outcome = {
        applied: false,
        people: read.people.length,
        added,
        removed,
        groups: read.groups,
        skipped: read.skipped,
      };
      const share = before.size === 0 ? 0 : removed / before.size;
      if (share > this.opts.maxDrop && !opts.acceptDrop) {
        outcome.problem = `the directory now lists ${read.people.length} people: ${removed} of ${before.size} would be removed (more than directory.maxDrop ${this.opts.maxDrop}); the last list stays until an operator runs \`faxgate directory sync --accept-drop\``;
      } else {
        // stored first: what the gateway applies is what a restart or another gateway will find
        const stored: StoredList = { at, people: read.people };
        await this.opts.store.setState(LDAP_LIST_KEY, JSON.stringify(stored));
        this.list = read.people;
        outcome.applied = true;
      }
    } catch (err) {
      outcome = {
        applied: false,
        people: this.list.length,
        added: 0,
        removed: 0,
        groups: 0,
        skipped: [],
        problem: `${describeError(err)}; the last good list (${this.list.length} people) stays`,
      };
    }
    this.status = {
      lastAttempt: at,
      lastGood: outcome.applied ? at : this.status.lastGood,
      ok: outcome.applied,
      problem: outcome.problem ?? null,
      people: this.list.length,
    };
    if (outcome.applied)
      logger.info(
        { people: outcome.people, added: outcome.added, removed: outcome.removed, skipped: outcome.skipped.length },
        "DIRECTORY synced",
      );
    else logger.warn({ problem: outcome.problem }, "DIRECTORY sync not applied");
    await this.record(outcome, opts.by).catch((err) =>
      logger.warn({ err: describeError(err) }, "DIRECTORY: the sync's ledger row could not be written"),
    );
    return outcome;
  }

  private record(o: SyncOutcome, by?: string): Promise<void> {
    const detail: Record<string, string | number | boolean> = {
      source: "ldap",
      applied: o.applied,
      people: o.people,
      added: o.added,
      removed: o.removed,
      skipped: o.skipped.length,
    };
    // a reason in a few words, never an address or a password (describeError names the operation)
    if (o.problem) detail.reason = o.problem.slice(0, 200);
    return this.opts.ledger.record({
      action: "directory-sync",
      actor: by ? { kind: "operator", id: by } : { kind: "gateway" },
      object: { kind: "config", id: "directory.ldap" },
      door: this.opts.door,
      detail,
    });
  }
}

/** A sync's refusal as an error, for the CLI's exit status. */
export function syncRefused(o: SyncOutcome): FaxgateError {
  return new FaxgateError(
    o.problem?.includes("directory.maxDrop") ? "DIRECTORY_DROP" : "DIRECTORY_UNAVAILABLE",
    o.problem ?? "not applied",
  );
}
