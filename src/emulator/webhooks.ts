// Webhooks as the real service is seen to offer them: an account registers URLs for the events
// fax.v1.{outbound,inbound}.{succeed,failed,complete}; when a fax reaches its final state the
// service POSTs the fax record (no file) as JSON to each matching URL, with Basic auth when one is
// set. Any 2xx counts; otherwise it retries 7 times at 5 s, 25 s, 2 min, 10 min, 52 min, 4 h and
// 22 h (scaled by the webhookRetryScale switch for tests). Deliveries are rows, so a restart
// neither loses nor repeats them.
import { randomUUID } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { rootCertificates } from "node:tls";
import type { Clock } from "../clock.js";
import type { Logger } from "../log/index.js";
import { invalid, notFound } from "./api-error.js";
import type { Behaviour } from "./behaviour.js";
import type { Db, FaxRow } from "./db.js";
import { faxState } from "./lifecycle.js";
import { renderFax } from "./shapes.js";

export const WEBHOOK_EVENTS = [
  "fax.v1.outbound.succeed",
  "fax.v1.outbound.failed",
  "fax.v1.outbound.complete",
  "fax.v1.inbound.succeed",
  "fax.v1.inbound.failed",
  "fax.v1.inbound.complete",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Seconds between attempts after the first: 7 retries, then the delivery is given up. */
export const RETRY_SCHEDULE_S = [5, 25, 120, 600, 3120, 4 * 3600, 22 * 3600] as const;

/** How long one delivery attempt may take before it counts as failed. */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** How often final states and due retries are looked for. */
const TICK_MS = 100;

export const WEBHOOK_SCHEMA = `
CREATE TABLE IF NOT EXISTS webhooks (
  uuid TEXT PRIMARY KEY, accountId TEXT NOT NULL, name TEXT NOT NULL, url TEXT NOT NULL,
  events TEXT NOT NULL, auth TEXT, numberId TEXT, attachmentEnabled INTEGER NOT NULL DEFAULT 0,
  createdAt INTEGER NOT NULL, updatedAt INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT, webhookId TEXT NOT NULL, messageId TEXT NOT NULL,
  event TEXT NOT NULL, body TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  -- pending | delivered | failed (given up after the last retry)
  state TEXT NOT NULL, nextAt INTEGER NOT NULL, lastStatus TEXT, attemptTimes TEXT NOT NULL DEFAULT '[]',
  createdAt INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (state, nextAt);
`;

export interface WebhookRow {
  uuid: string;
  accountId: string;
  name: string;
  url: string;
  events: string;
  auth: string | null;
  numberId: string | null;
  attachmentEnabled: number;
  createdAt: number;
  updatedAt: number;
}

interface DeliveryRow {
  id: number;
  webhookId: string;
  messageId: string;
  event: string;
  body: string;
  attempts: number;
  state: "pending" | "delivered" | "failed";
  nextAt: number;
  lastStatus: string | null;
  attemptTimes: string;
  createdAt: number;
}

export interface WebhookTrust {
  /** extra CA (PEM) to trust for https webhook URLs */
  ca?: string;
  /** accept any certificate of an https webhook URL (tests only) */
  insecure?: boolean;
}

export function renderWebhook(w: WebhookRow): Record<string, unknown> {
  return {
    uuid: w.uuid,
    accountId: w.accountId,
    name: w.name,
    url: w.url,
    events: JSON.parse(w.events) as Record<string, boolean>,
    auth: w.auth,
    numberId: w.numberId,
    attachmentEnabled: w.attachmentEnabled === 1,
    createdAt: new Date(w.createdAt).toISOString(),
    updatedAt: new Date(w.updatedAt).toISOString(),
  };
}

/** The fields of a webhook as sent (JSON or form), checked; `base` for an update. */
export function readWebhookInput(
  body: Record<string, unknown>,
  base?: WebhookRow,
): Omit<WebhookRow, "uuid" | "accountId" | "createdAt" | "updatedAt"> {
  const str = (k: string): string | undefined => {
    const v = body[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw invalid(`${k} must be a string`);
    return v.trim();
  };
  const name = str("name") ?? base?.name;
  if (!name) throw invalid("name is required");
  if (name.length > 128) throw invalid("name must be at most 128 characters");
  const url = str("url") ?? base?.url;
  if (!url) throw invalid("url is required");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid("url must be an absolute http or https URL");
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") throw invalid("url must be an http or https URL");
  const events =
    body.events === undefined
      ? base
        ? (JSON.parse(base.events) as Record<string, boolean>)
        : undefined
      : readEvents(body.events);
  if (!events || !Object.values(events).some(Boolean))
    throw invalid(`events must set at least one of ${WEBHOOK_EVENTS.join(", ")} to true`);
  const authRaw =
    body.auth === undefined ? (base?.auth ?? null) : body.auth === null || body.auth === "" ? null : str("auth")!;
  if (authRaw !== null && !/^[^:]+:.+$/s.test(authRaw)) throw invalid('auth must be "user:password"');
  const numberId = body.numberId === undefined ? (base?.numberId ?? null) : str("numberId") || null;
  const att = body.attachmentEnabled;
  const attachmentEnabled =
    att === undefined
      ? (base?.attachmentEnabled ?? 0)
      : att === true || att === "true"
        ? 1
        : att === false || att === "false"
          ? 0
          : badBool();
  return { name, url, events: JSON.stringify(events), auth: authRaw, numberId, attachmentEnabled };
}

function badBool(): never {
  throw invalid("attachmentEnabled must be true or false");
}

/** `events` as flags `{"fax.v1.outbound.complete": true}`, a JSON string of them, or a list of names. */
function readEvents(v: unknown): Record<string, boolean> {
  let value = v;
  if (typeof value === "string") {
    const t = value.trim();
    if (t.startsWith("{") || t.startsWith("[")) {
      try {
        value = JSON.parse(t);
      } catch {
        throw invalid("events is not valid JSON");
      }
    } else
      value = t
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
  }
  const out: Record<string, boolean> = {};
  if (Array.isArray(value)) {
    for (const e of value) out[String(e)] = true;
  } else if (value && typeof value === "object") {
    for (const [k, f] of Object.entries(value as Record<string, unknown>)) {
      if (typeof f !== "boolean" && f !== "true" && f !== "false")
        throw invalid(`events.${k.slice(0, 40)} must be true or false`);
      out[k] = f === true || f === "true";
    }
  } else throw invalid("events must be an object of event flags");
  for (const k of Object.keys(out))
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(k))
      throw invalid(`unknown event "${k.slice(0, 60)}" (${WEBHOOK_EVENTS.join(", ")})`);
  return out;
}

/** The events a fax in its final state raises. */
export function eventsFor(direction: string, status: string): WebhookEvent[] {
  const side = direction === "inbound" ? "inbound" : "outbound";
  const out: WebhookEvent[] = [];
  if (status === "success") out.push(`fax.v1.${side}.succeed`);
  else if (status === "failed") out.push(`fax.v1.${side}.failed`);
  out.push(`fax.v1.${side}.complete`);
  return out;
}

export class Webhooks {
  private timer: NodeJS.Timeout | null = null;
  private extra: NodeJS.Timeout | null = null;
  private inFlight = new Set<number>();
  private attempts = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly behaviour: () => Behaviour,
    private readonly trust: WebhookTrust = {},
  ) {
    db.exec(WEBHOOK_SCHEMA);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.extra) clearTimeout(this.extra);
    this.timer = this.extra = null;
    await Promise.allSettled([...this.attempts]);
  }

  list(accountId: string): WebhookRow[] {
    return this.db
      .prepare("SELECT * FROM webhooks WHERE accountId = ? ORDER BY createdAt, rowid")
      .all(accountId) as WebhookRow[];
  }

  get(accountId: string, uuid: string): WebhookRow {
    const row = this.db.prepare("SELECT * FROM webhooks WHERE uuid = ? AND accountId = ?").get(uuid, accountId) as
      | WebhookRow
      | undefined;
    if (!row) throw notFound(`webhook ${uuid} not found`);
    return row;
  }

  create(accountId: string, body: Record<string, unknown>): WebhookRow {
    const w = readWebhookInput(body);
    const now = this.clock.now();
    const uuid = randomUUID();
    this.db
      .prepare(`INSERT INTO webhooks (uuid, accountId, name, url, events, auth, numberId, attachmentEnabled, createdAt, updatedAt)
      VALUES (@uuid, @accountId, @name, @url, @events, @auth, @numberId, @attachmentEnabled, @now, @now)`)
      .run({ ...w, uuid, accountId, now });
    this.logger.info({ webhookId: uuid, url: redactUrl(w.url) }, "webhook registered");
    return this.get(accountId, uuid);
  }

  update(accountId: string, uuid: string, body: Record<string, unknown>): WebhookRow {
    const w = readWebhookInput(body, this.get(accountId, uuid));
    this.db
      .prepare(`UPDATE webhooks SET name = @name, url = @url, events = @events, auth = @auth, numberId = @numberId,
      attachmentEnabled = @attachmentEnabled, updatedAt = @now WHERE uuid = @uuid`)
      .run({ ...w, uuid, now: this.clock.now() });
    return this.get(accountId, uuid);
  }

  remove(accountId: string, uuid: string): void {
    this.get(accountId, uuid);
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM webhooks WHERE uuid = ?").run(uuid);
      this.db
        .prepare(
          "UPDATE webhook_deliveries SET state = 'failed', lastStatus = 'webhook removed' WHERE webhookId = ? AND state = 'pending'",
        )
        .run(uuid);
    })();
  }

  /** Every delivery with its attempts, for tests (GET /_emulator/webhook-deliveries). */
  deliveries(): Array<Record<string, unknown>> {
    const rows = this.db.prepare("SELECT * FROM webhook_deliveries ORDER BY id").all() as DeliveryRow[];
    return rows.map((d) => ({
      id: d.id,
      webhookId: d.webhookId,
      messageId: d.messageId,
      event: d.event,
      state: d.state,
      attempts: d.attempts,
      lastStatus: d.lastStatus,
      attemptTimes: (JSON.parse(d.attemptTimes) as number[]).map((t) => new Date(t).toISOString()),
      nextAt: d.state === "pending" ? new Date(d.nextAt).toISOString() : null,
    }));
  }

  /** One pass: queue the events of faxes that reached a final state, then send what is due. */
  tick(): void {
    if (this.stopped) return;
    try {
      this.queueFinished();
      this.sendDue();
    } catch (err) {
      this.logger.error({ err: err as Error }, "webhook pass failed");
    }
  }

  private queueFinished(): void {
    const now = this.clock.now();
    const rows = this.db
      .prepare(`SELECT * FROM faxes WHERE notifiedAt IS NULL AND deletedAt IS NULL AND readyAt <= @now
      AND (scheduledAt IS NULL OR scheduledAt <= @now) ORDER BY readyAt LIMIT 500`)
      .all({ now }) as FaxRow[];
    if (rows.length === 0) return;
    const hooks = this.db.prepare("SELECT * FROM webhooks").all() as WebhookRow[];
    const insert =
      this.db.prepare(`INSERT INTO webhook_deliveries (webhookId, messageId, event, body, state, nextAt, createdAt)
      VALUES (?, ?, ?, ?, 'pending', ?, ?)`);
    const mark = this.db.prepare("UPDATE faxes SET notifiedAt = ? WHERE messageId = ?");
    const cfMode = this.behaviour().cfMode;
    this.db.transaction(() => {
      for (const row of rows) {
        const state = faxState(row, now);
        const events = eventsFor(row.direction, state.status);
        const mine = hooks.filter((h) => h.accountId === row.accountId);
        if (mine.length > 0) {
          const body = JSON.stringify(renderFax(row, now, { cfMode }));
          for (const h of mine) {
            const flags = JSON.parse(h.events) as Record<string, boolean>;
            for (const e of events) if (flags[e]) insert.run(h.uuid, row.messageId, e, body, now, now);
          }
        }
        mark.run(now, row.messageId);
      }
    })();
  }

  private sendDue(): void {
    const now = this.clock.now();
    const due = this.db
      .prepare("SELECT * FROM webhook_deliveries WHERE state = 'pending' AND nextAt <= ? ORDER BY nextAt LIMIT 50")
      .all(now) as DeliveryRow[];
    for (const d of due) {
      if (this.inFlight.has(d.id)) continue;
      const hook = this.db.prepare("SELECT * FROM webhooks WHERE uuid = ?").get(d.webhookId) as WebhookRow | undefined;
      if (!hook) {
        this.db
          .prepare("UPDATE webhook_deliveries SET state = 'failed', lastStatus = 'webhook removed' WHERE id = ?")
          .run(d.id);
        continue;
      }
      this.inFlight.add(d.id);
      const p = this.attempt(hook, d).finally(() => {
        this.inFlight.delete(d.id);
        this.attempts.delete(p);
      });
      this.attempts.add(p);
    }
  }

  private async attempt(hook: WebhookRow, d: DeliveryRow): Promise<void> {
    const started = this.clock.now();
    let status: string;
    try {
      const code = await post(hook, d, this.trust);
      status = String(code);
    } catch (err) {
      status = (err as Error).message.slice(0, 200);
    }
    if (this.stopped) return; // the row stays pending: the next start sends it again
    const ok = /^2\d\d$/.test(status);
    const attempts = d.attempts + 1;
    const times = [...(JSON.parse(d.attemptTimes) as number[]), started];
    if (ok) {
      this.db
        .prepare(
          "UPDATE webhook_deliveries SET state = 'delivered', attempts = ?, lastStatus = ?, attemptTimes = ? WHERE id = ?",
        )
        .run(attempts, status, JSON.stringify(times), d.id);
      this.logger.info({ webhookId: hook.uuid, messageId: d.messageId, event: d.event, attempts }, "webhook delivered");
      return;
    }
    const retryIndex = attempts - 1;
    if (retryIndex >= RETRY_SCHEDULE_S.length) {
      this.db
        .prepare(
          "UPDATE webhook_deliveries SET state = 'failed', attempts = ?, lastStatus = ?, attemptTimes = ? WHERE id = ?",
        )
        .run(attempts, status, JSON.stringify(times), d.id);
      this.logger.warn(
        { webhookId: hook.uuid, messageId: d.messageId, event: d.event, attempts, status },
        "webhook given up",
      );
      return;
    }
    const delay = Math.max(1, Math.round(RETRY_SCHEDULE_S[retryIndex] * 1000 * this.behaviour().webhookRetryScale));
    this.db
      .prepare("UPDATE webhook_deliveries SET attempts = ?, lastStatus = ?, attemptTimes = ?, nextAt = ? WHERE id = ?")
      .run(attempts, status, JSON.stringify(times), this.clock.now() + delay, d.id);
    this.logger.info(
      { webhookId: hook.uuid, messageId: d.messageId, event: d.event, attempts, status, retryInMs: delay },
      "webhook refused; will retry",
    );
    // a scaled-down retry may be due before the next regular pass
    if (delay < TICK_MS && !this.stopped) {
      if (this.extra) clearTimeout(this.extra);
      this.extra = setTimeout(() => this.tick(), delay);
      this.extra.unref();
    }
  }
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = u.password = "";
    return u.toString();
  } catch {
    return "(invalid url)";
  }
}

/** One POST of the event; resolves with the HTTP status, rejects on a network failure. */
function post(hook: WebhookRow, d: DeliveryRow, trust: WebhookTrust): Promise<number> {
  const url = new URL(hook.url);
  const body = Buffer.from(d.body);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "content-length": String(body.length),
    "user-agent": "faxgate-emulator-webhooks",
    "x-webhook-event": d.event,
  };
  if (hook.auth) headers.authorization = `Basic ${Buffer.from(hook.auth).toString("base64")}`;
  const lib = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(
      url,
      {
        method: "POST",
        headers,
        timeout: ATTEMPT_TIMEOUT_MS,
        ...(url.protocol === "https:"
          ? { ca: trust.ca ? [...rootCertificates, trust.ca] : undefined, rejectUnauthorized: !trust.insecure }
          : {}),
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end(body);
  });
}
