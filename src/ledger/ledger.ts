// The compliance ledger on the queue's own database (store/sql/ledger.ts): one row per event, each
// chained to the one before. Built once in the composition root and handed to whoever records.
import { createHmac } from "node:crypto";
import {
  type Runner,
  type Db,
  appendLedger,
  GENESIS_HASH,
  ledgerHead,
  type LedgerFields,
  type LedgerRecord,
  ledgerRows,
} from "../store/index.js";
import { type ChainBreak, canonicalDetail, checkRows } from "./chain.js";
import { ChainSealer } from "./sealer.js";
import type { Ledger, LedgerEvent, LedgerFilter, LedgerRow } from "./events.js";

/** The chain's head: what an anchor keeps. */
export interface LedgerHead {
  seq: number;
  hash: string;
  at: string;
}

export interface VerifyResult {
  /** rows walked */
  rows: number;
  head: LedgerHead | null;
  broken: ChainBreak | null;
  /** rows committed but not yet sealed into the chain (PostgreSQL): not part of the walk */
  pending: { count: number; oldest: string | null };
}

/** A number as the ledger keys it: digits and the leading +, whatever spacing it was typed with. */
const numberForm = (n: string): string => n.replace(/[^+0-9]/g, "");

const PAGE = 1000;
const HASHES_KEPT = 1024;

export class SqlLedger implements Ledger {
  /** Seals PostgreSQL's pending rows into the chain (sealer.ts); the daemon starts its sweep. */
  readonly sealer: ChainSealer;

  /**
   * @param numberKey the HMAC key for fax numbers (number-key.ts); null where none exists yet (a
   *   CLI that only reads): then nothing can match a number, and recording one is refused.
   * @param onSealError a seal that failed (its rows stay pending for the next)
   */
  constructor(
    private readonly db: Db,
    private readonly numberKey: Buffer | null,
    onSealError?: (err: unknown) => void,
  ) {
    this.sealer = new ChainSealer(db, onSealError);
  }

  /** Hashes of the numbers seen lately: an office faxes the same few numbers over and over. */
  private readonly hashes = new Map<string, string>();

  /** The keyed hash a number is stored as (hex). */
  numberHash(number: string): string | null {
    if (!this.numberKey) return null;
    const form = numberForm(number);
    let hash = this.hashes.get(form);
    if (hash === undefined) {
      hash = createHmac("sha256", this.numberKey).update(form).digest("hex");
      // bounded: a sender writing to ever new numbers only empties it now and then
      if (this.hashes.size >= HASHES_KEPT) this.hashes.clear();
      this.hashes.set(form, hash);
    }
    return hash;
  }

  record(event: LedgerEvent, within?: Runner): Promise<void> {
    return this.recordAll([event], within);
  }

  async recordAll(events: readonly LedgerEvent[], within?: Runner): Promise<void> {
    if (events.length === 0) return;
    const rows = this.rowsFor(events);
    const append = async (t: Runner) => {
      for (const fields of rows) await appendLedger(t, fields);
    };
    if (within) await append(within);
    else {
      await this.db.tx("record a ledger event", append);
      this.sealer.kick();
    }
  }

  sealSoon(): void {
    this.sealer.kick();
  }

  /**
   * The rows `events` are stored as, unsealed (their place in the chain is given where they are
   * appended): for a writer that appends them in a commit of its own making (the intake's enqueue).
   */
  rowsFor(events: readonly LedgerEvent[]): LedgerFields[] {
    return events.map((e) => this.fields(e));
  }

  private fields(event: LedgerEvent): LedgerFields {
    if (event.number !== undefined && !this.numberKey)
      throw new Error("the ledger has no number key: it cannot record an event about a fax number");
    return {
      at: new Date(this.db.clock.now()).toISOString(),
      action: event.action,
      actor_kind: event.actor.kind,
      actor_id: event.actor.id ?? null,
      object_kind: event.object.kind,
      object_id: event.object.id,
      door: event.door,
      client: event.client ?? null,
      number_hash: event.number !== undefined ? this.numberHash(event.number) : null,
      detail: canonicalDetail(event.detail),
    };
  }

  async rows(filter: LedgerFilter = {}): Promise<LedgerRow[]> {
    if (filter.number !== undefined && !this.numberKey) return [];
    await this.sealer.sealNow();
    const records = await ledgerRows(this.db, this.query(filter));
    return records.map(toRow);
  }

  /** Every row matching `filter`, oldest first, a page at a time (an export of any size). */
  async *all(filter: Omit<LedgerFilter, "limit"> = {}): AsyncGenerator<LedgerRow> {
    if (filter.number !== undefined && !this.numberKey) return;
    await this.sealer.sealNow();
    let after = 0;
    for (;;) {
      const page = await ledgerRows(this.db, {
        ...this.query(filter),
        afterSeq: after,
        limit: PAGE,
      });
      for (const r of page) yield toRow(r);
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.seq;
    }
  }

  private query(filter: LedgerFilter) {
    return {
      since: filter.since,
      until: filter.until,
      user: filter.user,
      object: filter.object,
      action: filter.action,
      numberHash: filter.number !== undefined ? (this.numberHash(filter.number) ?? undefined) : undefined,
      limit: filter.limit,
    };
  }

  /** The newest rows first (the console's page); with `beforeSeq`, the page after one ending there. */
  async newest(filter: LedgerFilter = {}, beforeSeq?: number): Promise<LedgerRow[]> {
    if (filter.number !== undefined && !this.numberKey) return [];
    await this.sealer.sealNow();
    const records = await ledgerRows(this.db, { ...this.query(filter), newestFirst: true, beforeSeq });
    return records.map(toRow);
  }

  /** The sealed chain's head (what is pending is sealed first). */
  async head(): Promise<LedgerHead | null> {
    await this.sealer.sealNow();
    const h = await ledgerHead(this.db);
    return h ? { seq: h.seq, hash: h.hash, at: h.at } : null;
  }

  /**
   * Walks the whole chain, a page at a time; stops at the first break. Reads only: rows still
   * pending are counted, not sealed (their age tells whether any sealer runs).
   */
  async verify(): Promise<VerifyResult> {
    const pending = await this.sealer.pending();
    let expect = { seq: 1, prevHash: GENESIS_HASH };
    let last: LedgerRecord | undefined;
    let count = 0;
    for (;;) {
      // the first page from the lowest seq: a row slipped in before 1 is a break too
      const page = await ledgerRows(this.db, { afterSeq: count === 0 ? undefined : expect.seq - 1, limit: PAGE });
      const checked = checkRows(page, expect);
      if ("broken" in checked)
        return { rows: count, head: last ? headOf(last) : null, broken: checked.broken, pending };
      count += page.length;
      if (page.length > 0) last = page[page.length - 1];
      expect = checked.next;
      if (page.length < PAGE) break;
    }
    return { rows: count, head: last ? headOf(last) : null, broken: null, pending };
  }

  /** The row at `seq`'s hash, to hold an anchor against (null: no such row). */
  async hashAt(seq: number): Promise<string | null> {
    const [r] = await ledgerRows(this.db, { afterSeq: seq - 1, limit: 1 });
    return r && r.seq === seq ? r.hash : null;
  }
}

const headOf = (r: LedgerRecord): LedgerHead => ({ seq: r.seq, hash: r.hash, at: r.at });

function toRow(r: LedgerRecord): LedgerRow {
  return {
    seq: r.seq,
    at: r.at,
    action: r.action as LedgerRow["action"],
    actor: { kind: r.actor_kind as LedgerRow["actor"]["kind"], ...(r.actor_id !== null ? { id: r.actor_id } : {}) },
    object: { kind: r.object_kind as LedgerRow["object"]["kind"], id: r.object_id },
    door: r.door as LedgerRow["door"],
    client: r.client,
    numberHash: r.number_hash,
    detail: JSON.parse(r.detail) as LedgerRow["detail"],
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}
