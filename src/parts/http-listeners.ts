// The two HTTP listeners that face users and the service: the webhook receiver and the web
// console. They share what is left of this process's descriptors after a reserve for SMTP, the
// store and the spool (src/listener-limits.ts); the split is logged before they listen.
import type { FastifyInstance } from "fastify";
import { smtpSettings } from "../config/index.js";
import os from "node:os";
import type { HealthReport } from "../admin/index.js";
import type { FaxRecord } from "../fax/index.js";
import { descriptorBudget } from "../listener-limits.js";
import { OidcRelyingParty, TotpSealer } from "../auth/index.js";
import { LegalHolds } from "../retention/index.js";
import {
  StoredIdTokens,
  OperatorPages,
  WebConsole,
  StoredSessionStore,
  StoredPendingSignIns,
  callbackUrl,
  type DirectoryPageView,
} from "../web/index.js";
import { SignInFactors, FactorPending } from "../store/index.js";
import { serviceEventHandlers, readReceiverTls, WebhookReceiver } from "../webhooks/index.js";
import type { Converters } from "./converters.js";
import type { Core } from "./core.js";
import { createEvidence } from "./evidence.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export interface HttpListenerOptions {
  /** The dispatcher's door for a pushed outbound record. */
  applyServiceRecord: (rec: FaxRecord) => Promise<string>;
  notifyNow?: () => Promise<unknown>;
  receivedFax: ((rec: FaxRecord, serviceUserId: string | null) => Promise<boolean>) | null;
  readiness: () => Promise<HealthReport>;
  keyExpiry: () => Array<{ user: string; expiresAt: string | null; checkedAt: string }>;
  /** route groups of other parts on the console's listener (SCIM) */
  extraRoutes?: ReadonlyArray<{ prefix: string; routes: (app: FastifyInstance) => Promise<void> }>;
  /** the operator's directory page (parts/directory.ts) */
  directoryView?: () => Promise<DirectoryPageView>;
}

export interface HttpListeners {
  webhooks: WebhookReceiver | null;
  /** Budget log, console, receiver: in start order. */
  parts: Part[];
}

export function createHttpListeners(core: Core, conv: Converters, opts: HttpListenerOptions): HttpListeners {
  const { config, live, addresses } = core;
  const budget = descriptorBudget({ smtpConnections: config.smtp?.maxConnections ?? 0 });
  const webhooks = config.webhooks ? webhookReceiver(core, config.webhooks, budget, opts) : null;
  const web = config.web ? webConsole(core, config.web, conv, budget, opts) : null;
  // after a reload: sessions of removed users (or of a lost admin role) end
  if (web) live.onUsersChanged((users) => web.updateUsers(users));
  const logBudget: Part = {
    name: "descriptor budget",
    start: () => {
      if (!webhooks && !web) return;
      core.logger.info(
        {
          softLimit: budget.softLimit,
          inUse: budget.inUse,
          reserve: budget.reserve,
          web: web ? { max: budget.web.maxConnections, perAddress: budget.web.perAddress } : undefined,
          webhooks: webhooks
            ? { max: budget.webhooks.maxConnections, perAddress: budget.webhooks.perAddress }
            : undefined,
        },
        "descriptor budget for the HTTP listeners",
      );
    },
  };
  const parts: Part[] = [
    logBudget,
    {
      name: "web",
      start: async () => {
        if (web) addresses.web = await web.listen();
      },
      stop: () => web?.close(),
    },
    {
      name: "webhooks",
      start: async () => {
        if (webhooks) addresses.webhooks = await webhooks.listen();
      },
      stop: () => webhooks?.close(),
    },
  ];
  return { webhooks, parts };
}

type Budget = ReturnType<typeof descriptorBudget>;
type Config = Core["config"];

/** The service's webhooks: outbound records to the dispatcher, received faxes to the intake. */
function webhookReceiver(
  core: Core,
  config: NonNullable<Config["webhooks"]>,
  budget: Budget,
  opts: HttpListenerOptions,
): WebhookReceiver {
  return new WebhookReceiver({
    config,
    limits: budget.webhooks,
    tls: readReceiverTls(config.tls),
    logger: childLog(core.logger, { component: "webhooks" }),
    handlers: serviceEventHandlers({
      applyServiceRecord: opts.applyServiceRecord,
      notifyNow: opts.notifyNow,
      receivedFax: opts.receivedFax ?? undefined,
      logger: core.logger,
    }),
  });
}

/** The web console with its sign-in (sessions, factors, provider) and operator pages, all on the store. */
function webConsole(
  core: Core,
  config: NonNullable<Config["web"]>,
  conv: Converters,
  budget: Budget,
  opts: HttpListenerOptions,
): WebConsole {
  const { live, api } = core;
  return new WebConsole({
    config,
    extraRoutes: opts.extraRoutes,
    directory: opts.directoryView,
    tls: readReceiverTls(config.tls),
    limits: budget.web,
    store: core.store,
    ledger: core.ledger,
    // in the queue's database: a restart keeps them, and a fleet shares them (docs/ha.md)
    sessionStore: new StoredSessionStore(core.store.sql),
    users: () => live.users(),
    clientFor: (user) => api.clientFor(user, "console"),
    destinations: core.destinations,
    defaultCountryCode: () => smtpSettings(live.config()).defaultCountryCode,
    confirmWaitMs: () => smtpSettings(live.config()).senderAuth.confirmWait,
    partial: () => live.config().intake.partial,
    office: conv.convertQueue,
    pressure: core.pressure,
    dataDir: core.config.data,
    logger: childLog(core.logger, { component: "web" }),
    clock: core.clock,
    metrics: core.metrics,
    // the mail limits hold for the console too, also in a gateway that takes no mail
    maxUploadBytes: smtpSettings(core.config).maxMessageBytes,
    faxesPerMinute: smtpSettings(core.config).maxMessagesPerMinute,
    counters: core.counters,
    historyAvailable: (reserve) => api.gate.historyAvailable(reserve),
    inbound: () => live.config().inbound,
    mailedLinkLifetime: () => live.config().retention.links,
    evidence: createEvidence(core),
    oidc: config.oidc ? oidcSignIn(core, config.oidc) : undefined,
    factors: {
      store: new SignInFactors(core.store.sql),
      pending: new FactorPending(core.store.sql, () => core.clock.now()),
      config: config.factors,
      sealer: config.factors.totpKey ? new TotpSealer(config.factors.totpKey) : null,
      publicUrl: () => consoleUrl(core) ?? "",
    },
    ledgerPages: { ledger: core.ledger, holds: new LegalHolds({ store: core.store, ledger: core.ledger }) },
    operator: new OperatorPages({
      store: core.store,
      users: () => live.users(),
      refusals: core.refusals,
      readiness: opts.readiness,
      historyAvailable: () => api.gate.historyAvailable(),
      keyExpiry: opts.keyExpiry,
    }),
  });
}

/** Console sign-in through the OpenID provider: the callback is on the console's own address. */
function oidcSignIn(core: Core, rules: NonNullable<NonNullable<Core["config"]["web"]>["oidc"]>) {
  const publicUrl = () => consoleUrl(core) ?? "";
  return {
    rp: new OidcRelyingParty(rules, () => callbackUrl(publicUrl())),
    rules,
    publicUrl,
    pending: new StoredPendingSignIns(core.store.sql, () => core.clock.now()),
    // sealed under a key made from the client secret: the ID token carries the person's claims
    idTokens: new StoredIdTokens(
      core.store.sql,
      () => core.clock.now(),
      rules.clientSecret ? new TotpSealer(rules.clientSecret, "oidc-id-token") : null,
    ),
  };
}

/** The console's address for links in mails: web.publicUrl, else where it listens; null without a console. */
export function consoleUrl(core: Pick<Core, "config" | "addresses">): string | null {
  const web = core.config.web;
  if (!web) return null;
  if (web.publicUrl) return web.publicUrl;
  const a = core.addresses.web;
  if (!a) return null;
  const host = a.host === "0.0.0.0" || a.host === "::" ? os.hostname() : a.host.includes(":") ? `[${a.host}]` : a.host;
  return `${web.tls ? "https" : "http"}://${host}:${a.port}`;
}
