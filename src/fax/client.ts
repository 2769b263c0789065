// The fax service client (the delivery agent of the gateway): every API operation over undici,
// checked against the documented limits before anything is sent, with answers of both API variants
// normalised and every failure typed by the one classifier in ./failure-rules.ts.
import { performance } from "node:perf_hooks";
import type { Dispatcher, FormData } from "undici";
import { FaxgateError } from "../errors.js";
import { silentLogger, type Logger } from "../log/index.js";
import type { ApiCallObserver } from "../metrics/index.js";
import { createFaxAgent, DEFAULT_TIMEOUT_MS } from "./agent.js";
import type { ApiGate, GateClass, GateRelease } from "./api-gate.js";
import type { ContactCache } from "./contact-cache.js";
import { offsetMemoryOf, walkHistory } from "./history-walk.js";
import { FaxApiError } from "./api-error.js";
import { dispositionFileName, streamToFile } from "./download-to-file.js";
import { classifyStatus, classifyTransportError, parseRetryAfter } from "./failure-rules.js";
import { checkCoverFields, checkHistoryLimit, checkLength, checkOffset, LIMITS, requireField } from "./limits.js";
import {
  asObject,
  badResponse,
  serviceErrorOf,
  toApiKey,
  toApiKeys,
  toContact,
  toFaxRecord,
  toPage,
  toSendManyResult,
} from "./normalize.js";
import {
  accessFields,
  checkFiles,
  coverFields,
  extraSendFields,
  historyFields,
  multipart,
  queryString,
  urlEncoded,
  type Fields,
} from "./request-body.js";
import type {
  ApiKey,
  ApiVariant,
  Contact,
  ContactInput,
  CreateApiKeyRequest,
  FaxApi,
  FaxFile,
  FaxRecord,
  HistoryQuery,
  ListContactsQuery,
  Page,
  SendFaxRequest,
  SendManyRequest,
  SendHooks,
  SendManyResult,
  UpdateApiKeyRequest,
  User,
} from "./types.js";

export { createFaxAgent } from "./agent.js";
export { FaxApiError, isFaxApiError } from "./api-error.js";

export interface FaxClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Request shapes to send; answers of both variants are always accepted. Default 'a'. */
  variant?: ApiVariant;
  /** The shared keep-alive agent (createFaxAgent); without one the client makes its own. */
  dispatcher?: Dispatcher;
  /** Extra trusted CA, only used when the client makes its own agent. */
  caFile?: string;
  ca?: string | Buffer;
  /** Waiting for the answer's headers, and between body chunks. Default 30000. */
  timeoutMs?: number;
  observer?: ApiCallObserver;
  logger?: Logger;
  /** Wall clock for Retry-After HTTP-dates. */
  now?: () => number;
  /** The process's one gate (rate, history budget); shared by every client of the account. */
  gate?: ApiGate;
  /** Who this client calls for, in the gate (default background). */
  gateClass?: GateClass;
  /** The user's contact lists, shared by all their clients (./contact-cache.ts). */
  contactCache?: ContactCache;
  /** Taken before each call that goes out (a console user's share, ./user-share.ts); may throw. */
  share?: () => Promise<() => void>;
}

type Method = "GET" | "POST" | "PATCH" | "DELETE";

interface Call {
  /** Operation name for metrics and messages, e.g. "sendFax". */
  op: string;
  method: Method;
  path: string;
  query?: Fields;
  form?: Fields;
  multipart?: FormData;
  /** Not idempotent: a failure after the request may have reached the service leaves its outcome unknown. */
  creates?: boolean;
  accept?: string;
  /** Awaited after the gate, before the request is written (SendHooks.leaving). */
  leaving?: () => Promise<void>;
}

/** 429s on one history call waited out before the error goes to the caller */
const HISTORY_429_TRIES = 4;
/** history pages walked by historyAll when the caller sets no limit */
const DEFAULT_PAGE = 100;
/** how much of an error answer we read (its JSON error object), the rest is discarded */
const ERROR_BODY_MAX = 64 * 1024;

export class FaxClient implements FaxApi {
  private readonly origin: string;
  private readonly basePath: string;
  private readonly authorization: string;
  private readonly variant: ApiVariant;
  private readonly dispatcher: Dispatcher;
  private readonly ownAgent: boolean;
  private readonly timeoutMs: number;
  private readonly observer?: ApiCallObserver;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly gate?: ApiGate;
  private readonly gateClass: GateClass;
  private readonly contactCache?: ContactCache;
  private readonly share?: () => Promise<() => void>;

  constructor(opts: FaxClientOptions) {
    let url: URL;
    try {
      url = new URL(opts.baseUrl);
    } catch {
      throw new FaxgateError("API_INSECURE_URL", "the fax service base URL is not a valid https: URL", {
        field: "api.baseUrl",
      });
    }
    if (url.protocol !== "https:") {
      throw new FaxgateError("API_INSECURE_URL", `the fax service base URL must use https: (got ${url.protocol})`, {
        field: "api.baseUrl",
      });
    }
    if (!opts.apiKey || /[\r\n]/.test(opts.apiKey)) {
      throw new FaxgateError("API_INVALID_INPUT", "an API key is required (and must be one line)", { field: "apiKey" });
    }
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.authorization = `Basic ${opts.apiKey}`;
    this.variant = opts.variant ?? "a";
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.observer = opts.observer;
    this.log = opts.logger ?? silentLogger();
    this.now = opts.now ?? Date.now;
    this.gate = opts.gate;
    this.gateClass = opts.gateClass ?? "background";
    this.contactCache = opts.contactCache;
    this.share = opts.share;
    this.ownAgent = !opts.dispatcher;
    this.dispatcher =
      opts.dispatcher ??
      createFaxAgent({ caFile: opts.caFile, ca: opts.ca, timeoutMs: this.timeoutMs, connections: 4 });
  }

  /** Closes the agent this client made for itself; a shared agent is its owner's to close. */
  async close(): Promise<void> {
    if (this.ownAgent) await this.dispatcher.close();
  }

  // ---- ping and current user

  /**
   * Whether something answers at the base URL. The body is not documented (plain `OK` from the
   * real service, JSON from older emulators): JSON is parsed, anything else returned as text.
   * It proves nothing about a key: use checkKey (./check-key.ts) for that.
   */
  async ping(): Promise<unknown> {
    return this.exchange(
      { op: "ping", method: "GET", path: "/ping", accept: "text/plain, application/json" },
      async (res) => {
        const text = (await res.body.text()).trim();
        try {
          return JSON.parse(text) as unknown;
        } catch {
          return text || "OK";
        }
      },
    );
  }

  async me(): Promise<User> {
    return this.json({ op: "me", method: "GET", path: "/v1/me" }, (b) => {
      const o = asObject(b, "the user");
      if (typeof o.userId !== "string") throw badResponse("a user without a userId");
      return o as unknown as User;
    });
  }

  // ---- API keys

  async createApiKey(req: CreateApiKeyRequest): Promise<ApiKey> {
    requireField("name", req.name);
    requireField("userId", req.userId);
    requireField("access", req.access);
    checkLength("name", req.name, LIMITS.keyName);
    const form: Fields = [
      ["name", req.name],
      ["userId", req.userId],
      ...accessFields(req.access, this.variant),
      ["expiresAt", req.expiresAt],
    ];
    return this.json({ op: "createApiKey", method: "POST", path: "/api-keys", form, creates: true }, toApiKey);
  }

  async updateApiKey(keyId: string, req: UpdateApiKeyRequest): Promise<ApiKey> {
    requireField("keyId", keyId);
    checkLength("name", req.name, LIMITS.keyName);
    if (req.name !== undefined) requireField("name", req.name);
    const form: Fields = [["name", req.name], ...accessFields(req.access, this.variant), ["expiresAt", req.expiresAt]];
    return this.json({ op: "updateApiKey", method: "PATCH", path: `/api-keys/${enc(keyId)}`, form }, toApiKey);
  }

  async listApiKeys(userId?: string): Promise<ApiKey[]> {
    return this.json({ op: "listApiKeys", method: "GET", path: "/api-keys", query: [["userId", userId]] }, toApiKeys);
  }

  async deleteApiKey(keyId: string): Promise<void> {
    requireField("keyId", keyId);
    await this.empty({ op: "deleteApiKey", method: "DELETE", path: `/api-keys/${enc(keyId)}` });
  }

  // ---- contacts

  async listContacts(q: ListContactsQuery = {}): Promise<Page<Contact>> {
    checkOffset(q.offset);
    checkPositive("limit", q.limit);
    const query: Fields = [
      ["userId", q.userId],
      ["offset", q.offset],
      ["limit", q.limit],
      ["order", q.order],
      ["query", q.query],
    ];
    const load = () =>
      this.json({ op: "listContacts", method: "GET", path: "/v1/contacts", query }, (b) => toPage(b, toContact, q));
    return this.contactCache ? this.contactCache.get(JSON.stringify(query), load) : load();
  }

  /** A contact write (even one whose outcome is unknown) makes the user's cached lists stale. */
  private async writingContacts<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      this.contactCache?.invalidate();
    }
  }

  async createContact(input: ContactInput, userId?: string): Promise<Contact> {
    requireField("name", input.name);
    const form = contactFields(input, true);
    return this.writingContacts(() =>
      this.json(
        { op: "createContact", method: "POST", path: "/v1/contacts", query: [["userId", userId]], form, creates: true },
        toContact,
      ),
    );
  }

  async updateContact(contactId: string, input: ContactInput): Promise<Contact> {
    requireField("contactId", contactId);
    return this.writingContacts(() =>
      this.json(
        {
          op: "updateContact",
          method: "PATCH",
          path: `/v1/contacts/${enc(contactId)}`,
          form: contactFields(input, false),
        },
        toContact,
      ),
    );
  }

  async deleteContact(contactId: string): Promise<void> {
    requireField("contactId", contactId);
    await this.writingContacts(() =>
      this.empty({ op: "deleteContact", method: "DELETE", path: `/v1/contacts/${enc(contactId)}` }),
    );
  }

  async deleteContacts(contactIds: string[]): Promise<void> {
    requireField(
      "contactIds",
      contactIds.filter((id) => id.trim() !== ""),
    );
    await this.writingContacts(() =>
      this.empty({
        op: "deleteContacts",
        method: "DELETE",
        path: "/v1/contacts/bulk",
        query: [["contactIds", contactIds.join(",")]],
      }),
    );
  }

  // ---- faxes

  async sendFax(req: SendFaxRequest, hooks: SendHooks = {}): Promise<FaxRecord> {
    requireField("faxNumber", req.faxNumber);
    const files = req.files ?? [];
    requireDocument(files.length, req.coverPage);
    checkCoverFields(req);
    const fields: Fields = [["faxNumber", req.faxNumber], ...coverFields(req), ...extraSendFields(req)];
    const call = await this.sendCall("sendFax", "/v1/faxes", fields, files);
    return this.json({ ...call, leaving: hooks.leaving }, singleFax);
  }

  async sendFaxToMany(req: SendManyRequest, hooks: SendHooks = {}): Promise<SendManyResult> {
    const numbers = (req.recipientFax ?? []).filter((n) => n.trim() !== "");
    const contacts = (req.recipientContacts ?? []).filter((c) => c.trim() !== "");
    if (numbers.length === 0 && contacts.length === 0) {
      throw new FaxgateError("API_INVALID_INPUT", "recipientFax or recipientContacts is required", {
        field: "recipientFax",
      });
    }
    const files = req.files ?? [];
    requireDocument(files.length, req.coverPage);
    checkCoverFields(req);
    const fields: Fields = [
      ["recipientFax", numbers.length > 0 ? numbers.join(",") : undefined],
      ["recipientContacts", contacts.length > 0 ? contacts.join(",") : undefined],
      ...coverFields(req),
      ...extraSendFields(req),
    ];
    const call = await this.sendCall("sendFaxToMany", "/v1/faxes/multiple", fields, files);
    return this.json({ ...call, leaving: hooks.leaving }, toSendManyResult);
  }

  async resendFax(messageId: string, recipientFax?: string): Promise<SendManyResult> {
    requireField("messageId", messageId);
    const form: Fields = [
      ["messageId", messageId],
      ["recipientFax", recipientFax || undefined],
    ];
    return this.json(
      { op: "resendFax", method: "POST", path: "/v1/fax/resend", form, creates: true },
      toSendManyResult,
    );
  }

  async updateFax(messageId: string, update: { isArchived: boolean }): Promise<FaxRecord> {
    requireField("messageId", messageId);
    if (typeof update?.isArchived !== "boolean")
      throw new FaxgateError("API_INVALID_INPUT", "isArchived (true or false) is required", { field: "isArchived" });
    return this.json(
      {
        op: "updateFax",
        method: "PATCH",
        path: `/v1/fax/${enc(messageId)}`,
        form: [["isArchived", update.isArchived]],
      },
      toFaxRecord,
    );
  }

  async downloadFax(messageId: string, destPath: string): Promise<{ bytes: number; fileName: string | null }> {
    requireField("messageId", messageId);
    requireField("destPath", destPath);
    const call: Call = {
      op: "downloadFax",
      method: "GET",
      path: `/v1/fax/${enc(messageId)}/download`,
      accept: "application/pdf, application/json;q=0.5",
    };
    return this.exchange(call, async (res) => {
      // A JSON answer with 200 is not a fax, whatever it says; do not save it as one.
      if (/json/i.test(String(res.headers["content-type"] ?? "")))
        throw badResponse("a download with JSON instead of a PDF");
      const bytes = await streamToFile(res.body, destPath);
      const declared = Number(res.headers["content-length"]);
      if (Number.isFinite(declared) && declared !== bytes) {
        throw badResponse(`a download of ${bytes} bytes where ${declared} were announced`);
      }
      return { bytes, fileName: dispositionFileName(res.headers["content-disposition"]) };
    });
  }

  async faxInfo(messageId: string): Promise<FaxRecord> {
    requireField("messageId", messageId);
    return this.json({ op: "faxInfo", method: "GET", path: `/v1/fax/${enc(messageId)}/info` }, toFaxRecord);
  }

  async deleteFax(messageId: string): Promise<void> {
    requireField("messageId", messageId);
    await this.empty({ op: "deleteFax", method: "DELETE", path: `/v1/fax/${enc(messageId)}` });
  }

  async history(q: HistoryQuery = {}): Promise<Page<FaxRecord>> {
    checkOffset(q.offset);
    checkHistoryLimit(q.limit);
    const call: Call = { op: "history", method: "GET", path: "/v1/fax/history", query: historyFields(q, this.variant) };
    // History is rate limited per account: with a gate, a 429 waits for the window (the gate
    // closes history for everyone meanwhile) and asks again, a few times, instead of failing.
    for (let refused = 0; ; refused++) {
      try {
        return await this.json(call, (b) => toPage(b, toFaxRecord, q));
      } catch (err) {
        if (!this.gate || refused >= HISTORY_429_TRIES || !(err instanceof FaxApiError) || err.status !== 429)
          throw err;
        const wait = this.gate.historyLimited(err.retryAfterMs);
        this.log.warn({ waitMs: wait }, "fax history is rate limited (429); waiting for the window");
      }
    }
  }

  /**
   * Every record from `query.offset` on, page by page, whichever way the service counts `offset`
   * (./history-walk.ts); a record seen twice is yielded once.
   */
  async *historyAll(query: HistoryQuery = {}): AsyncIterable<FaxRecord> {
    // The walk hands over one page and waits until the consumer has taken it (no read-ahead);
    // a consumer that stops early ends the walk.
    let handOver: ((rows: FaxRecord[] | null) => void) | null = null;
    let taken: (() => void) | null = null;
    let stopped = false;
    let failure: unknown = null;
    const nextPage = (): Promise<FaxRecord[] | null> =>
      new Promise((resolve) => {
        handOver = resolve;
      });
    let pending = nextPage();
    const walk = walkHistory(
      query,
      { limit: query.limit ?? DEFAULT_PAGE, memory: offsetMemoryOf(this), page: (q) => this.history(q) },
      async (rows) => {
        if (stopped) return true;
        const consumed = new Promise<void>((resolve) => {
          taken = resolve;
        });
        handOver!(rows);
        await consumed;
        return stopped;
      },
    ).then(
      () => handOver!(null),
      (err) => {
        failure = err;
        handOver!(null);
      },
    );
    try {
      for (;;) {
        const rows = await pending;
        if (rows === null) break;
        pending = nextPage();
        const release = taken!;
        for (const r of rows) yield r;
        release();
      }
      if (failure) throw failure;
    } finally {
      stopped = true;
      (taken as (() => void) | null)?.();
      await walk;
    }
  }

  async coverPages(): Promise<unknown[]> {
    return this.json({ op: "coverPages", method: "GET", path: "/coverpages" }, (b) => {
      if (Array.isArray(b)) return b;
      const rows = asObject(b, "the cover page list").rows;
      if (!Array.isArray(rows)) throw badResponse("the cover page list without a list");
      return rows;
    });
  }

  // ---- transport

  /** Multipart when files go along (streamed from disk), a plain form otherwise. */
  private async sendCall(op: string, path: string, fields: Fields, files: FaxFile[]): Promise<Call> {
    if (files.length === 0) return { op, method: "POST", path, form: fields, creates: true };
    await checkFiles(files);
    return { op, method: "POST", path, multipart: await multipart(fields, files), creates: true };
  }

  private async json<T>(call: Call, normalise: (body: unknown) => T): Promise<T> {
    return this.exchange(call, async (res) => {
      const text = await res.body.text();
      let parsed: unknown = null;
      if (text.trim() !== "") {
        try {
          parsed = JSON.parse(text);
        } catch {
          throw badResponse(`${call.op} with a body that is not JSON`);
        }
      }
      return normalise(parsed);
    });
  }

  private async empty(call: Call): Promise<void> {
    await this.exchange(call, async (res) => {
      await res.body.dump();
    });
  }

  /**
   * One request: send, classify the answer or the failure, report it to the observer once, and
   * hand a 2xx answer to `read`. Whatever happens, the answer's body is consumed or discarded so
   * that the connection goes back to the pool.
   */
  private async exchange<T>(call: Call, read: (res: Dispatcher.ResponseData) => Promise<T>): Promise<T> {
    const path = this.basePath + call.path + queryString(call.query ?? []);
    const where = `${call.op} ${call.method} ${call.path}`;
    const headers: Record<string, string> = {
      authorization: this.authorization,
      accept: call.accept ?? "application/json",
      "user-agent": "faxgate",
    };
    let body: string | FormData | undefined;
    if (call.multipart) body = call.multipart;
    else if (call.form) {
      body = urlEncoded(call.form);
      headers["content-type"] = "application/x-www-form-urlencoded";
    }

    const started = performance.now();
    let reported = false;
    const report = (status: string): void => {
      if (reported) return;
      reported = true;
      const seconds = (performance.now() - started) / 1000;
      this.observer?.(call.op, status, seconds);
      this.log.debug(
        { op: call.op, method: call.method, path: call.path, status, ms: Math.round(seconds * 1000) },
        "api call",
      );
    };

    // a console user over their share is refused before the call waits anywhere
    const shared = await this.share?.();
    let admitted: GateRelease | undefined;
    let answer: Parameters<GateRelease>[0];
    try {
      if (this.gate) admitted = await this.gate.admit(call.op, this.gateClass);
      // after every wait, so the caller's "it left" mark is as close to the request as it can be
      await call.leaving?.();
      return await this.send(call, path, where, headers, body, report, read);
    } catch (err) {
      // the service asked us to slow down: the gate does, for every caller (api-gate.ts)
      if (err instanceof FaxApiError && err.status === 429)
        answer = { rateLimited: true, retryAfterMs: err.retryAfterMs };
      throw err;
    } finally {
      admitted?.(answer);
      shared?.();
    }
  }

  private async send<T>(
    call: Call,
    path: string,
    where: string,
    headers: Record<string, string>,
    body: string | FormData | undefined,
    report: (status: string) => void,
    read: (res: Dispatcher.ResponseData) => Promise<T>,
  ): Promise<T> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.dispatcher.request({
        origin: this.origin,
        path,
        method: call.method,
        headers,
        body,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (err) {
      const e = this.transportError(err, call, where);
      report(e.code);
      throw e;
    }

    if (res.statusCode < 200 || res.statusCode > 299) {
      const e = await this.statusError(res, call, where);
      report(String(res.statusCode));
      throw e;
    }

    try {
      const out = await read(res);
      report(String(res.statusCode));
      return out;
    } catch (err) {
      await res.body.dump().catch(() => undefined);
      const e =
        err instanceof FaxgateError
          ? this.answerError(err, call, where, res.statusCode)
          : this.transportError(err, call, where);
      report(e.code);
      throw e;
    }
  }

  private transportError(err: unknown, call: Call, where: string): FaxApiError {
    const f = classifyTransportError(err, call.creates === true);
    const what = f.outcomeUnknown
      ? "the connection failed after the request was sent; the service may have acted on it"
      : f.code === "API_NETWORK"
        ? "the fax service could not be reached"
        : f.code === "API_TIMEOUT"
          ? "no answer in time"
          : "the request could not be made";
    return new FaxApiError(f.code, `${where}: ${what} (${f.detail})`, {
      temporary: f.temporary,
      outcomeUnknown: f.outcomeUnknown,
      cause: err,
    });
  }

  /** A 2xx whose body we could not read or use: if the call creates something, it likely did. */
  private answerError(err: FaxgateError, call: Call, where: string, status: number): FaxApiError {
    if (err instanceof FaxApiError) return err;
    const unknown = call.creates === true;
    return new FaxApiError(unknown ? "API_OUTCOME_UNKNOWN" : err.code, `${where}: ${err.message}`, {
      status,
      temporary: unknown || err.temporary,
      outcomeUnknown: unknown,
      field: err.field,
      cause: err,
    });
  }

  private async statusError(res: Dispatcher.ResponseData, call: Call, where: string): Promise<FaxApiError> {
    const text = await readCapped(res.body, ERROR_BODY_MAX).catch(() => "");
    const svc = serviceErrorOf(text);
    const rule = classifyStatus(res.statusCode);
    const retryAfterMs =
      res.statusCode === 429 || res.statusCode === 503
        ? parseRetryAfter(res.headers["retry-after"], this.now())
        : undefined;
    const outcomeUnknown = call.creates === true && rule.mayHaveHappened === true;
    const detail = [svc.name, svc.message].filter(Boolean).join(": ");
    return new FaxApiError(rule.code, `${where}: HTTP ${res.statusCode}${detail ? ` ${detail}` : ""}`, {
      status: res.statusCode,
      serviceName: svc.name,
      serviceMessage: svc.message,
      retryAfterMs,
      temporary: rule.temporary,
      outcomeUnknown,
    });
  }
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

function checkPositive(field: string, n: number | undefined): void {
  if (n === undefined) return;
  if (!Number.isInteger(n) || n < 1)
    throw new FaxgateError("API_INVALID_INPUT", `${field} must be a whole number of at least 1 (got ${n})`, { field });
}

function requireDocument(files: number, coverPage: boolean | undefined): void {
  if (files === 0 && coverPage !== true) {
    throw new FaxgateError("API_INVALID_INPUT", "a fax needs at least one file or a cover page", {
      field: "attachments",
    });
  }
}

function contactFields(c: ContactInput, create: boolean): Fields {
  return [
    ["name", c.name],
    ["email", c.email],
    ["faxNumber", c.faxNumber],
    ["phoneNumber", c.phoneNumber],
    ["organizationId", c.organizationId],
    ["isPublic", c.isPublic],
    ["publicEditable", c.publicEditable],
    ["isOrganization", create ? c.isOrganization : undefined],
  ];
}

/** A single send answers with the fax record (or, seen in one variant's examples, inside `success`). */
function singleFax(body: unknown): FaxRecord {
  const o = asObject(body, "a send");
  if (typeof o.messageId !== "string" && Array.isArray(o.success) && o.success.length === 1)
    return toFaxRecord(o.success[0]);
  return toFaxRecord(o);
}

/** At most `max` bytes of a body as text; the rest is discarded without buffering it. */
async function readCapped(body: Dispatcher.ResponseData["body"], max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < max) {
      const b = Buffer.from(chunk as Uint8Array);
      chunks.push(b.subarray(0, max - size));
      size += b.length;
    }
  }
  return Buffer.concat(chunks).toString("utf8");
}
