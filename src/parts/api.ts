// Every API call of this process passes one gate (rate, concurrency, the history budget) and one
// keep-alive agent. A client per user and caller class (docs/architecture.md), each user's
// contact cache shared by their clients; all of them are built again when the users change.
import type { FleetCounters } from "../fleet-counter.js";
import type { Clock } from "../clock.js";
import { type Config, consoleApiShare, type UserConfig } from "../config/index.js";
import { dispatcherOwner } from "../dispatch/index.js";
import {
  ApiGate,
  type GateClass,
  FaxClient,
  FaxClientFactory,
  ContactCache,
  type FaxApi,
  UserShare,
} from "../fax/index.js";
import { childLog, type Logger } from "../log/index.js";
import { FleetBudget, type QueueStore } from "../store/index.js";
import { apiObserver, type Metrics } from "../metrics/index.js";
import type { Part } from "./part.js";

/** Where the fax service is; in sandbox mode the embedded emulator's address. */
export interface ServiceEndpoint {
  baseUrl: string;
  caFile?: string;
  adminKey?: string;
}

export interface ApiClientsOptions {
  config: Config;
  service: ServiceEndpoint;
  users: () => readonly UserConfig[];
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
  /** where the console's per-user share of calls a minute is counted (the fleet's store, or here) */
  counters: FleetCounters;
  /** On PostgreSQL the account's budget is shared by every gateway on the store (docs/ha.md). */
  store: QueueStore;
}

export class ApiClients {
  readonly gate: ApiGate;
  readonly fax: FaxClientFactory;
  /** The fleet's shared budget (PostgreSQL), or null: this process is the whole budget. */
  readonly fleet: FleetBudget | null;
  /** Each console user's share of the API calls (web.apiCallsPerMinute, web.apiCallsAtOnce). */
  private readonly consoleShare: UserShare;
  private readonly clients = new Map<string, FaxApi>();
  private readonly contactCaches = new Map<string, ContactCache>();
  readonly part: Part;

  constructor(private readonly opts: ApiClientsOptions) {
    const { api } = opts.config;
    const fleetDb = opts.store.fleetDb();
    this.fleet = fleetDb
      ? new FleetBudget({
          db: fleetDb,
          gateway: dispatcherOwner(),
          account: () => this.accountId(),
          ratePerSecond: api.ratePerSecond,
          dispatchShare: api.dispatchShare,
          concurrency: api.concurrency,
          historyPerMinute: api.historyPerMinute,
          logger: childLog(opts.logger, { component: "fleet" }),
        })
      : null;
    this.gate = new ApiGate({
      ...(this.fleet ? { fleet: this.fleet } : {}),
      ratePerSecond: api.ratePerSecond,
      concurrency: api.concurrency,
      dispatchShare: api.dispatchShare,
      historyPerMinute: api.historyPerMinute,
      onPaceChange: (rate, why) => {
        const log = childLog(opts.logger, { component: "api" });
        if (why === "429") log.warn({ ratePerSecond: rate }, "the fax service refused a call (429): calls slowed down");
        else log.info({ ratePerSecond: rate }, "calls to the fax service back at api.ratePerSecond");
      },
    });
    this.consoleShare = new UserShare({
      ...consoleApiShare(opts.config),
      clock: opts.clock,
      // a minute's calls are counted across the fleet; calls at once are each gateway's own
      shared: opts.counters("console-api-calls", consoleApiShare(opts.config).perMinute, 60_000),
    });
    this.fax = new FaxClientFactory({
      baseUrl: opts.service.baseUrl,
      caFile: opts.service.caFile,
      api,
      connections: Math.max(8, api.concurrency * 2),
      observer: apiObserver(opts.metrics),
      gate: this.gate,
    });
    const fleet = this.fleet;
    this.part = {
      name: "http",
      ...(fleet ? { start: () => fleet.start() } : {}),
      stop: async () => {
        await fleet?.stop();
        await this.fax.close();
      },
    };
  }

  /**
   * The fax account of this gateway's keys (/v1/me accountId): the admin key's, else the first
   * user's that answers. Asked outside the gate, once, since the gate's budget is the account's.
   */
  private async accountId(): Promise<string> {
    const keys = [this.opts.service.adminKey, ...this.opts.users().map((u) => u.apiKey)].filter(
      (k): k is string => !!k,
    );
    let last: unknown = new Error("no API key is configured");
    for (const apiKey of keys) {
      const client = new FaxClient({
        baseUrl: this.opts.service.baseUrl,
        apiKey,
        variant: this.opts.config.api.variant,
        dispatcher: this.fax.agent,
        timeoutMs: this.opts.config.api.timeoutMs,
      });
      try {
        return (await client.me()).accountId;
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }

  private admin: FaxApi | null = null;

  /** The account's admin client (api.adminKey), or null: the key that may delete any of the account's faxes. */
  adminClient(): FaxApi | null {
    const key = this.opts.service.adminKey;
    if (!key) return null;
    this.admin ??= this.fax.withKey(key, childLog(this.opts.logger, { component: "api", user: "admin" }));
    return this.admin;
  }

  /** `user`'s client for calls of `cls` (the API gate's class). */
  clientFor(user: string, cls: GateClass = "background"): FaxApi {
    const key = `${cls}\0${user}`;
    let client = this.clients.get(key);
    if (!client) {
      const u = this.opts.users().find((x) => x.name === user);
      if (!u) throw new Error(`no configured user named "${user}"`);
      let contactCache = this.contactCaches.get(user);
      if (!contactCache) {
        const clock = this.opts.clock;
        contactCache = new ContactCache(this.opts.config.api.contactCache, () => clock.now());
        this.contactCaches.set(user, contactCache);
      }
      client = this.fax.withKey(u.apiKey, childLog(this.opts.logger, { component: "api", user }), {
        gateClass: cls,
        contactCache,
        ...(cls === "console" ? { share: () => this.consoleShare.take(user) } : {}),
      });
      this.clients.set(key, client);
    }
    return client;
  }

  /** New users or keys: every client is built again at its next use. */
  usersChanged(): void {
    this.clients.clear();
    this.contactCaches.clear();
  }
}
