// Legal holds (issue 56): an operator keeps every copy of a user's, a number's, a job's, a received
// fax's or a matter's faxes (a matter is a job tag) from the retention rule, however old, until the
// hold is released. Each change is one transaction with its ledger row, under the lock the purge
// takes (store/sql/retention.ts): a hold and a purge cannot interleave.
import { FaxgateError } from "../errors.js";
import type { Ledger, LedgerDoor } from "../ledger/index.js";
import {
  type QueueStore,
  addHold,
  HOLD_KINDS,
  type HoldKind,
  type LegalHold,
  listHolds,
  releaseHold,
} from "../store/index.js";

export interface HoldRequest {
  kind: HoldKind;
  value: string;
  reason: string;
  /** the operator */
  by: string;
  door: LedgerDoor;
  client?: string;
}

/** A number as the store keeps it (E.164): the spacing a person types it with removed. */
function e164(raw: string): string {
  const n = raw.replace(/[\s().-]/g, "");
  if (!/^\+[1-9]\d{5,14}$/.test(n))
    throw new FaxgateError("API_INVALID_INPUT", "a held number must be in international form: + and 6 to 15 digits");
  return n;
}

export class LegalHolds {
  constructor(private readonly opts: { store: QueueStore; ledger: Ledger }) {}

  async add(req: HoldRequest): Promise<LegalHold> {
    if (!HOLD_KINDS.includes(req.kind))
      throw new FaxgateError("API_INVALID_INPUT", `a hold is on one of ${HOLD_KINDS.join(", ")}`);
    const reason = req.reason.trim();
    if (!reason) throw new FaxgateError("API_INVALID_INPUT", "a legal hold needs a reason (--reason)");
    const value = req.kind === "number" ? e164(req.value) : req.value.trim();
    if (!value) throw new FaxgateError("API_INVALID_INPUT", `a hold on a ${req.kind} needs its ${req.kind}`);
    const hold = await addHold(
      this.opts.store.retentionPort().db,
      { kind: req.kind, value, reason: reason.slice(0, 500), by: req.by },
      (t, h) =>
        this.opts.ledger.record(
          {
            action: "held",
            actor: { kind: "operator", id: req.by },
            object: { kind: "hold", id: h.id },
            door: req.door,
            ...(req.client ? { client: req.client } : {}),
            // a number only as the ledger keeps numbers (keyed hash), never in the detail
            ...(h.kind === "number" ? { number: h.value } : {}),
            detail: { on: h.kind, ...(h.kind === "number" ? {} : { value: h.value }) },
          },
          t,
        ),
    );
    this.opts.ledger.sealSoon();
    return hold;
  }

  /** Ends a hold; the reason (required, as for a hold) goes into the ledger row. */
  async release(id: string, req: Omit<HoldRequest, "kind" | "value">): Promise<LegalHold> {
    const reason = req.reason.trim();
    if (!reason) throw new FaxgateError("API_INVALID_INPUT", "releasing a legal hold needs a reason (--reason)");
    const hold = await releaseHold(this.opts.store.retentionPort().db, id, req.by, (t, h) =>
      this.opts.ledger.record(
        {
          action: "hold-released",
          actor: { kind: "operator", id: req.by },
          object: { kind: "hold", id: h.id },
          door: req.door,
          ...(req.client ? { client: req.client } : {}),
          ...(h.kind === "number" ? { number: h.value } : {}),
          detail: { on: h.kind, ...(h.kind === "number" ? {} : { value: h.value }), reason: reason.slice(0, 500) },
        },
        t,
      ),
    );
    this.opts.ledger.sealSoon();
    return hold;
  }

  list(all = false): Promise<LegalHold[]> {
    return listHolds(this.opts.store.retentionPort().db, all);
  }

  /** Whether a hold covers everything of `user` (their spool originals stay while it does). */
  async holdsUser(user: string): Promise<boolean> {
    return (await this.list()).some((h) => h.kind === "user" && h.value === user);
  }
}

/** A held value as shown to people (CLI, console): a number not whole (screens end up in logs and shots). */
export function shownHoldValue(h: Pick<LegalHold, "kind" | "value">): string {
  return h.kind === "number" ? `${h.value.slice(0, 4)}…${h.value.slice(-2)}` : h.value;
}
