// What the console's route groups share: its collaborators (WebConsoleDeps, given by the
// composition root), the queue view, the live updates, the per-user fax rate, the session rules,
// and the few steps several groups take (the job a session may see, the numbers of a new fax, the
// accept step shared with mail and print).
import type { Ledger } from "../ledger/index.js";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { systemClock, type Clock } from "../clock.js";
import type { InboundConfig, PartialMode, UserConfig, WebConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import type { EvidenceMaker } from "../evidence/index.js";
import type { FaxApi } from "../fax/index.js";
import type { DestinationCheck } from "../recipients/index.js";
import { acceptForm, newFaxRecipients, type DocumentConverter, type QueuePressure } from "../intake/index.js";
import type { ListenerLimits } from "../listener-limits.js";
import type { Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import { RateLimiter } from "../auth/index.js";
import type { FleetCounters } from "../fleet-counter.js";
import type { Job, LeftOut, NewDocument, NewRecipient } from "../store/index.js";
import { LiveUpdates } from "./live.js";
import type { FactorSettings } from "./factor-settings.js";
import type { LedgerPagesDeps } from "./ledger.js";
import type { OperatorPages } from "./operator.js";
import type { OidcSignIn } from "./sign-in-oidc-sessions.js";
import { QueueView, type ConsoleStore } from "./queue-view.js";
import type { DirectoryPageView } from "./directory-page.js";
import type { SessionStore } from "./session-store.js";
import { SessionRules, sessionOf, type Session } from "./sessions.js";

export interface WebConsoleDeps {
  config: WebConfig;
  /** route groups of other rooms under a prefix of their own (SCIM: /scim/v2), outside the console's sign-in */
  extraRoutes?: ReadonlyArray<{ prefix: string; routes: (app: FastifyInstance) => Promise<void> }>;
  /** certificate and key (PEM text), read from web.tls */
  tls?: { cert: string; key: string };
  store: ConsoleStore;
  /** the compliance ledger: faxes taken in, views and downloads (docs/compliance.md) */
  ledger: Ledger;
  /** where sessions are kept: the queue's database (shared by a fleet on one PostgreSQL) */
  sessionStore: SessionStore;
  users: () => readonly UserConfig[];
  clientFor: (user: string) => FaxApi;
  destinations: DestinationCheck;
  defaultCountryCode: () => string;
  /** smtp.senderAuth.confirmWait (ms): how long a fax to a new number waits for its owner */
  confirmWaitMs: () => number;
  /** intake.partial: a file that cannot be faxed refuses the fax (default) or is sent without */
  partial?: () => PartialMode;
  office: DocumentConverter;
  /** queue.maxWaiting: a full queue answers a new fax 503 with Retry-After (intake's QUEUE_FULL) */
  pressure: QueuePressure;
  dataDir: string;
  logger: Logger;
  clock?: Clock;
  metrics?: Metrics;
  /** what the operator's page shows (queue, refusals, service); absent: no operator page */
  operator?: OperatorPages;
  /** the operator's ledger search and legal holds; absent: no such pages */
  ledgerPages?: LedgerPagesDeps;
  /** largest upload, bytes (smtp.maxMessageBytes) */
  maxUploadBytes: number;
  /** whether the account's history budget has room now (received faxes are not fetched when not) */
  historyAvailable?: (reserve: number) => boolean;
  /** the shared inbox's groups (inbound.groups); absent: no inbox */
  inbound?: () => InboundConfig;
  /** new faxes per user per minute (smtp.maxMessagesPerMinute) */
  faxesPerMinute: number;
  /** makes the evidence bundles of sent faxes (src/evidence/); absent: no evidence button */
  evidence?: EvidenceMaker;
  /** where sign-in lockouts and fax rates are counted: the fleet's store on PostgreSQL, this process on SQLite */
  counters: FleetCounters;
  /** retention.links as it is now (ms; null: forever): a mailed link stops working after it */
  mailedLinkLifetime: () => number | null;
  /** connection caps and timeouts (default: a share of this process's descriptors) */
  limits?: ListenerLimits;
  /** sign-in through an OpenID Connect provider (web.oidc); absent: password only */
  oidc?: OidcSignIn;
  /** second factors (passkeys, TOTP) kept in the store; absent: password (or provider) alone */
  factors?: FactorSettings;
  /** the operator's directory page (groups -> roles/inboxes, people, last sync); absent: none configured */
  directory?: () => Promise<DirectoryPageView>;
}

export class ConsoleContext {
  readonly clock: Clock;
  readonly log: Logger;
  readonly view: QueueView;
  readonly live: LiveUpdates;
  readonly rate: RateLimiter;
  readonly sessions: SessionRules;
  readonly lifetimeMs: number;

  constructor(readonly deps: WebConsoleDeps) {
    this.clock = deps.clock ?? systemClock;
    this.log = deps.logger;
    this.lifetimeMs = deps.config.sessionLifetime;
    this.sessions = new SessionRules(deps.sessionStore, this.clock, this.lifetimeMs, deps.config.idleTimeout ?? null);
    this.rate = new RateLimiter(deps.faxesPerMinute, this.clock, deps.counters, "console-faxes");
    this.view = new QueueView(deps.store);
    this.live = new LiveUpdates({
      view: this.view,
      intervalMs: deps.config.livePoll,
      clock: this.clock,
      logger: this.log,
      session: (id) => this.sessions.current(id),
    });
  }

  /** The job named in the URL if the user may see it; otherwise the same 404 as for no job. */
  async ownJob(req: FastifyRequest): Promise<Job> {
    const s = sessionOf(req);
    const id = (req.params as { id: string }).id;
    const job = /^[A-Za-z0-9_-]{1,100}$/.test(id) ? await this.view.getJob(id) : null;
    if (!job || (job.user !== s.user && !s.admin)) {
      if (job) this.log.warn({ user: s.user, job: id }, "WEB refused: another user's job");
      throw new FaxgateError("JOB_NOT_FOUND", "no such job");
    }
    return job;
  }

  /** The numbers (or contacts) checked, and one fax of the user's rate taken; refused by name otherwise. */
  async recipientsOf(s: Session, to: string[]): Promise<NewRecipient[]> {
    const recipients = await newFaxRecipients({
      to,
      user: s.user,
      defaultCountryCode: this.deps.defaultCountryCode(),
      destinations: this.deps.destinations,
      contacts: this.deps.clientFor(s.user),
    });
    if (recipients.length === 0) throw new FaxgateError("USAGE", "give at least one fax number or contact");
    if (!(await this.rate.allow(s.user)))
      throw new FaxgateError("USAGE", "too many faxes from you in the last minute; try again shortly", {
        httpStatus: 429,
      });
    return recipients;
  }

  /** The accept step shared with mail, print and `faxgate send`. */
  async submit(
    s: Session,
    input: {
      recipients: NewRecipient[];
      documents: NewDocument[];
      cover: Job["cover"];
      origin: Record<string, string>;
      leftOut?: LeftOut[];
    },
  ): Promise<Job> {
    const { job } = await acceptForm(
      {
        store: this.deps.store,
        ledger: this.deps.ledger,
        log: this.log,
        metrics: this.deps.metrics,
        pressure: this.deps.pressure,
      },
      { source: "web", user: s.user, ...input },
      { user: s.user, via: "web" },
    );
    this.live.poke();
    return job;
  }

  /** The console's scratch folder for uploads and downloads in flight. */
  async scratch(): Promise<string> {
    const dir = path.join(this.deps.dataDir, "web-tmp");
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }
}
