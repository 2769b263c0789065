// The one door for a received fax (the webhook receiver and the inbound poller both come here):
// its document fetched, the rules asked where it goes, the fax kept in the store once per service
// messageId, then each delivery made. Deliveries are idempotent (notifications have dedupe keys, the
// folder write happens once before the "routed" entry), so a crash between keeping and routing
// is finished by the next sighting of the same fax, and a fax seen twice is routed once.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import path from "node:path";
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { InboundConfig, InboundDelivery, UserConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import { faxNumber } from "../format.js";
import { type FaxApi, type FaxRecord, isNotShown } from "../fax/index.js";
import type { Ledger } from "../ledger/index.js";
import type { Logger } from "../log/index.js";
import { inboundPayload, senderOf } from "./service-record.js";
import { isFinalStatus } from "./poller-cursor.js";
import {
  type QueueStore,
  queueDeliveries,
  endTextWait,
  getReceivedText,
  type ReceivedText,
  linkReply,
} from "../store/index.js";
import { connectorTarget, kindLabel } from "../connectors/index.js";
import { keptFaxPayload, type InboundPayload, type ReceivedFax } from "../received/index.js";
import { attributeReceived } from "./attribution.js";
import { folderFileName, writeToFolder } from "./folder-delivery.js";
import { describeDelivery, holdForText, inboxesOf, route, waitsForText } from "./routes.js";

export interface ReceivedIntakeOptions {
  store: QueueStore;
  clientFor: (user: string) => FaxApi;
  inbound: () => InboundConfig;
  users: () => readonly UserConfig[];
  /** A configured user's own record on the service (GET /v1/me, cached): whose a fax is (attribution.ts). */
  me: (user: string) => Promise<{ userId: string }>;
  dataDir: string;
  logger: Logger;
  /** each fax routed is a ledger row naming its route (docs/compliance.md) */
  ledger: Pick<Ledger, "record">;
  clock?: Clock;
  /** told when a fax was queued for a connector (the delivery queue then works it at once) */
  connectorQueued?: () => void;
  /**
   * OCR and reply codes (issue 51): each fax kept with a document has its text queued (the duty is
   * poked) when OCR `reads` or `replies()` says codes are looked for now; with rules on text (and
   * OCR on), or while its code is looked for, the fax waits in the default route's inbox,
   * `waitForMs` at most.
   */
  text?: { poke(): void; waitForMs: number; reads: boolean; replies: () => Promise<boolean> };
}

/** What the look for a reply code found on a held fax (reply-routing.ts). */
export type ReplyFinding =
  | { kind: "valid"; jobId: string; owner: string; group?: string }
  /** a code of ours that does not verify (altered or forged), or none at all, or no look possible */
  | { kind: "forged" | "none" | "skipped"; why?: string };

export class ReceivedFaxIntake {
  private readonly log: Logger;
  private readonly clock: Clock;

  constructor(private readonly opts: ReceivedIntakeOptions) {
    this.log = opts.logger;
    this.clock = opts.clock ?? systemClock;
  }

  /**
   * True when the fax is kept and routed (now or before); false for one not final yet. `seenBy` is
   * the user whose key found it (it downloads the document); the fax is kept for the user the
   * service's record names (attribution.ts). `r` from the webhook's door is the fax info already.
   */
  async receive(seenBy: string, r: FaxRecord, via: "webhook" | "poll"): Promise<boolean> {
    if (!isFinalStatus(r.status)) return false;
    const store = this.opts.store;
    let [fax] = await store.listReceived({ messageId: r.messageId, limit: 1 });
    if (fax && (await this.routed(fax.id))) return true;
    // one info call per new fax: a fax already kept keeps its user
    const user = fax ? fax.user : await this.ownerOf(seenBy, r, via);
    const facts = { dialled: r.faxNumber || null, sender: senderOf(r), csid: r.faxCsid || null, user };
    const cfg = this.opts.inbound();
    const text = this.opts.text;
    const reads = Boolean(text?.reads);
    // rules on text wait for it (with OCR on); a fax with no document never has text, and routes
    // at once. So do all faxes while reply codes are looked for: a reply's code wins over the rules
    const looks = text ? await text.replies() : false;
    const holds = (document: boolean) => document && ((reads && waitsForText(cfg)) || looks);
    let decision = holds(fax?.hasDocument ?? false) ? holdForText(cfg, reads) : route(cfg, { ...facts, text: null });
    if (!fax) {
      const document = r.status === "success" ? await this.download(seenBy, r.messageId) : null;
      decision = holds(document !== null) ? holdForText(cfg, reads) : route(cfg, { ...facts, text: null });
      const waitsUntil = holds(document !== null)
        ? new Date(this.clock.now() + (this.opts.text?.waitForMs ?? 0)).toISOString()
        : null;
      const kept = await store.keepReceived({
        messageId: r.messageId,
        user,
        dialled: facts.dialled,
        sender: facts.sender,
        csid: facts.csid,
        pages: r.pagesCount ?? r.pagesComplete ?? null,
        status: r.status,
        receivedAt: r.createdAt ?? new Date(this.clock.now()).toISOString(),
        groups: inboxesOf(decision),
        document,
        detail: `received for ${user} (${via})${facts.dialled ? ` on ${faxNumber(facts.dialled)}` : ""}`,
        // the duty's row: its text read (OCR on), or its pages looked at for a code
        ...((reads || looks) && text ? { readText: { waitsUntil } } : {}),
      });
      fax = kept.fax;
      if (kept.duplicate && (await this.routed(fax.id))) return true;
      this.log.info(
        { user, messageId: r.messageId, received: fax.id, pages: fax.pages, rules: decision.rules },
        "RECEIVED fax kept",
      );
      if (!kept.duplicate && fax.hasDocument) this.opts.text?.poke();
    }
    const payload = inboundPayload(r);
    const done: string[] = [];
    for (const d of decision.deliveries) done.push(await this.deliver(d, fax, payload, decision.rules.join(", ")));
    await store.changeReceived(fax.id, {
      set: {},
      event: { action: "routed", actor: null, detail: `rule ${decision.rules.join(", ")}: ${done.join("; ")}` },
    });
    // after the fax's own "routed" entry: a crash between the two leaves the row out, never doubled
    await this.recordRouted(fax, decision.rules.join(", "), decision.deliveries.length);
    return true;
  }

  /** Whose the fax is, by the service's record (the history's rows may lack `users`: its info has them). */
  private async ownerOf(seenBy: string, r: FaxRecord, via: "webhook" | "poll"): Promise<string> {
    const info = via === "webhook" || r.users?.length ? r : await this.infoOr(seenBy, r);
    const { user, by, named, tiedWith } = await attributeReceived(info, seenBy, this.opts);
    const messageId = r.messageId;
    if (user !== seenBy)
      this.log.info({ user, seenBy, messageId, by }, "received fax belongs to another user than the key that saw it");
    // a changed service shows: a record that stops naming users, or names only strangers
    if (named === "nobody")
      this.log.info({ user, messageId }, "received fax names no user at the service: kept for the key's user");
    if (named === "unknown users")
      this.log.warn({ user, messageId }, "received fax names only users not configured here: kept for the key's user");
    if (tiedWith)
      this.log.warn(
        { user, tiedWith, messageId },
        "received fax names several configured users alike: the first in config order keeps it",
      );
    return user;
  }

  /**
   * The fax info; for a fax the history just showed but the service no longer has for this key
   * (deleted meanwhile: 404, 403), the history's record, so one such fax does not block the key's
   * later ones forever. A temporary error throws: the next poll retries.
   */
  private async infoOr(seenBy: string, r: FaxRecord): Promise<FaxRecord> {
    try {
      return await this.opts.clientFor(seenBy).faxInfo(r.messageId);
    } catch (err) {
      if (!isNotShown(err)) throw err;
      this.log.warn(
        { seenBy, messageId: r.messageId, err: describeError(err) },
        "received fax's info is gone at the service: attributed by its history record",
      );
      return r;
    }
  }

  private async recordRouted(fax: ReceivedFax, route: string, deliveries: number, why?: string): Promise<void> {
    await this.opts.ledger
      .record({
        action: "routed",
        actor: { kind: "gateway" },
        object: { kind: "received", id: fax.id },
        door: "gateway",
        ...(fax.sender ? { number: fax.sender } : {}),
        detail: { route, deliveries, ...(why ? { after: why } : {}) },
      })
      .catch((err: unknown) =>
        this.log.error({ received: fax.id, err: describeError(err) }, "LEDGER the routed row was not recorded"),
      );
  }

  /**
   * A fax held for its text (issue 51) routed now that the text is known, or the wait is over
   * (`text` null: none could be read in time; rules on text then do not match). Deliveries are
   * idempotent as on first sight; the hold ends last, so a crash mid-way routes it again.
   */
  async routeWithText(t: ReceivedText, reason?: string): Promise<void> {
    const store = this.opts.store;
    const fax = await store.getReceived(t.faxId);
    if (!fax) return;
    const text = t.state === "done" ? t.body : null;
    const facts = { dialled: fax.dialled, sender: fax.sender, csid: fax.csid, user: fax.user, text };
    const decision = route(this.opts.inbound(), facts);
    const late = t.state === "pending" || t.state === "running";
    const why =
      reason ??
      // OCR off: the fax was held only for the look for its reply code (which failed, or came late)
      (!this.opts.text?.reads
        ? late
          ? "its reply code not looked for in time"
          : "a look for its reply code that failed"
        : text !== null
          ? "its text read"
          : late
            ? "no text in time"
            : "no readable text");
    await store.changeReceived(fax.id, {
      set: { groups: [...new Set([...fax.groups, ...inboxesOf(decision)])] },
      event: { action: "routed", actor: null, detail: `after ${why}: rule ${decision.rules.join(", ")}` },
    });
    const base = keptFaxPayload(fax, {});
    const done: string[] = [];
    for (const d of decision.deliveries) done.push(await this.deliver(d, fax, base, decision.rules.join(", ")));
    await endTextWait(store.sql, fax.id);
    await this.recordRouted(fax, decision.rules.join(", "), decision.deliveries.length, why);
    this.log.info({ received: fax.id, rules: decision.rules, text: why }, "RECEIVED fax routed after its text");
  }

  /**
   * A held fax whose pages were looked at for a reply code. A valid code routes it to the sent
   * fax's owner (a mail to them, and the received-fax page theirs to open) and to the group inbox
   * the code names (still configured), links both timelines and ends the hold: the code wins over
   * every rule; an owner who has left leaves the group alone to receive it. A code that does not
   * verify is said on the timeline and the fax routes by the rules; so does a fax without one, now
   * unless rules on its text (read by OCR) hold it on for its text. Idempotent: a look run again
   * finds the hold ended.
   */
  async routeByReply(faxId: string, found: ReplyFinding): Promise<void> {
    const store = this.opts.store;
    const fax = await store.getReceived(faxId);
    const held = await getReceivedText(store.sql, faxId);
    if (!fax || !held?.waitsUntil) return;
    if (found.kind === "valid") {
      const job = await store.getJob(found.jobId);
      const owner = this.opts.users().some((u) => u.name === found.owner) ? found.owner : null;
      const group = found.group && this.opts.inbound().groups[found.group] ? found.group : null;
      // a sent fax since purged, or an owner who has left with no group to answer for them:
      // the code proves nothing to route by
      const gone =
        !job || job.user !== found.owner
          ? "its sent fax is no longer kept"
          : !owner && !group
            ? `its sender is no longer a user${found.group ? ` and group ${found.group} is not configured` : ""}`
            : null;
      if (!gone) return this.routeToOwner(fax, found.jobId, { owner, group, sender: found.owner });
      await this.note(fax.id, "reply code", `reply code verified, but ${gone}; routed by the rules`);
    } else if (found.kind === "forged") {
      await this.note(fax.id, "reply code", "reply code did not verify; routed by the rules");
      this.log.warn({ received: fax.id }, "RECEIVED fax carries a reply code that does not verify");
    }
    // the rules route it now, unless rules on text hold it on for its text OCR reads (text-routing.ts)
    if (!(this.opts.text?.reads && waitsForText(this.opts.inbound())))
      await this.routeWithText(held, found.kind === "forged" ? "a reply code that did not verify" : "no reply code");
  }

  private async routeToOwner(
    fax: ReceivedFax,
    jobId: string,
    to: { owner: string | null; group: string | null; sender: string },
  ): Promise<void> {
    const store = this.opts.store;
    const base = keptFaxPayload(fax, {});
    const members = to.group ? (this.opts.inbound().groups[to.group]?.members ?? []) : [];
    // the group's inbox tells each member, the owner among them; an owner outside it is mailed too
    const ds: InboundDelivery[] = [
      ...(to.group ? [{ inbox: to.group }] : []),
      ...(to.owner && !members.includes(to.owner) ? [{ users: [to.owner] }] : []),
    ];
    const done: string[] = [];
    for (const d of ds) done.push(await this.deliver(d, fax, base, "reply code"));
    await linkReply(store.sql, { faxId: fax.id, jobId });
    const whom = to.owner
      ? `the sender of job ${jobId}${to.group ? ` and group ${to.group}` : ""}`
      : `group ${to.group} (the sender of job ${jobId}, ${to.sender}, is no longer a user)`;
    await store.changeReceived(fax.id, {
      set: to.group ? { groups: [...new Set([...fax.groups, to.group])] } : {},
      event: { action: "routed", actor: null, detail: `by its reply code to ${whom}: ${done.join("; ")}` },
    });
    await endTextWait(store.sql, fax.id);
    await this.recordRouted(fax, "reply code", ds.length, `its reply code verified: a reply to job ${jobId}`);
    this.log.info(
      { received: fax.id, job: jobId, user: to.owner, group: to.group },
      "RECEIVED fax routed by its reply code",
    );
  }

  private async note(faxId: string, action: string, detail: string): Promise<void> {
    await this.opts.store.changeReceived(faxId, { set: {}, event: { action, actor: null, detail } });
  }

  private async routed(id: string): Promise<boolean> {
    return (await this.opts.store.listReceivedEvents(id)).some((e) => e.action === "routed");
  }

  private async download(user: string, messageId: string): Promise<Uint8Array | null> {
    const root = path.join(this.opts.dataDir, "tmp", "inbound");
    await mkdir(root, { recursive: true, mode: 0o750 });
    const dir = await mkdtemp(path.join(root, "fax-"));
    try {
      const file = path.join(dir, "fax.pdf");
      await this.opts.clientFor(user).downloadFax(messageId, file);
      return await readFile(file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** One delivery; answers what was done, for the timeline (never the document's content). */
  private async deliver(d: InboundDelivery, fax: ReceivedFax, base: InboundPayload, rule: string): Promise<string> {
    const payload: InboundPayload = { ...base, receivedId: fax.id };
    const connector = connectorTarget(d);
    if (connector) {
      // a queued row, worked by the delivery queue (connectors/): a system of record that is down
      // must not hold the fax's other deliveries, nor lose this one
      const where = `${kindLabel(connector.kind)} ${connector.target}`;
      if (!fax.hasDocument) return `${where}: no document to send (${fax.status})`;
      await queueDeliveries(this.opts.store.sql, [{ faxId: fax.id, ...connector, rule, owner: fax.user }]);
      this.opts.connectorQueued?.();
      return `queued for ${where}`;
    }
    if ("receiver" in d) {
      // its user removed by a reload while the fax waited for routing: say so, not "mailed"
      if (!(await this.notifyUser(fax.user, fax, payload)))
        return `${describeDelivery(d)}: ${fax.user} is not a configured user: nobody mailed`;
    } else if ("users" in d) {
      for (const u of d.users) await this.notifyUser(u, fax, payload);
    } else if ("mail" in d) {
      await this.opts.store.enqueueNotification({
        kind: "inbound",
        user: fax.user,
        jobId: null,
        dedupeKey: `inbound:${fax.messageId}:mail:${d.mail.toLowerCase()}`,
        payload: { ...payload, to: d.mail },
      });
    } else if ("inbox" in d) {
      const group = this.opts.inbound().groups[d.inbox];
      for (const m of group?.members ?? []) await this.notifyUser(m, fax, { ...payload, group: d.inbox });
    } else if ("folder" in d) {
      if (!fax.hasDocument) return `${describeDelivery(d)}: no document to write (${fax.status})`;
      const data = (await this.opts.store.readReceivedDocument(fax.id))!;
      const name = folderFileName(d.name, fax);
      try {
        const written = await writeToFolder(d.folder, name, data, parseInt(d.mode, 8), {
          ...(d.owner ? { owner: d.owner } : {}),
          ...(d.group ? { group: d.group } : {}),
        });
        this.log.info(
          { received: fax.id, folder: d.folder, file: path.basename(written) },
          "RECEIVED fax written to a folder",
        );
        return `written to ${written}`;
      } catch (err) {
        // the poller or the service tries again; the fax stays kept meanwhile
        this.log.error(
          { received: fax.id, folder: d.folder, err: describeError(err) },
          "received fax could not be written to its folder",
        );
        throw err;
      }
    }
    return describeDelivery(d);
  }

  /** False when `user` is not configured (now): nobody is mailed. */
  private async notifyUser(user: string, fax: ReceivedFax, payload: InboundPayload): Promise<boolean> {
    if (!this.opts.users().some((u) => u.name === user)) return false;
    // the receiving user's own mail keeps the key it always had: one mail per fax and user
    const dedupeKey = user === fax.user ? `inbound:${fax.messageId}` : `inbound:${fax.messageId}:user:${user}`;
    const { duplicate } = await this.opts.store.enqueueNotification({
      kind: "inbound",
      user,
      jobId: null,
      dedupeKey,
      payload,
    });
    if (!duplicate)
      this.log.info({ user, messageId: fax.messageId, received: fax.id }, "QUEUED inbound fax notification");
    return true;
  }
}
