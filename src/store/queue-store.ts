// The durable queue's contract, asynchronous so that SQLite (one box) and PostgreSQL (several
// gateways sharing one queue) both implement it. Every stage (intake, dispatch, notify, the CLI,
// the web console) depends on this interface, never on a backend class.
import type pg from "pg";
import type { Db } from "./sql/db.js";
import type { JobLedgerRows } from "./sql/ledger.js";
import type {
  CoverSpec,
  Job,
  JobEvent,
  JobFilter,
  JobMeta,
  JobSource,
  NewDocument,
  NewJob,
  NewNotification,
  Notification,
  NewRecipient,
  QueueCounts,
  Recipient,
  RecipientState,
  StoredDocument,
} from "./types.js";
import type { ReceivedStore } from "./received.js";
import type { SignedUse, SignedUseAnswer } from "./signed-uses.js";

/** What an operator does to a job (the CLI and the console): one step of the transition table each. */
export type OperatorStep = "retry" | "cancel" | "hold" | "release";

/** What a job may wait for its owner to give. */
export type OwnerWait = "address" | "confirmation";

/**
 * Recipients the dispatcher follows, with their job's user: those accepted by the service and not
 * finished (`processing`), or unknown sends due for reconciliation (`unknown`).
 */
export type RecipientFilter =
  | { state: "processing"; limit?: number }
  | { state: "unknown"; sentBefore: Date; limit?: number };

/** What retention needs of a store: its query layer, and how a purged job's files go (store/sql/retention.ts). */
export interface RetentionPort {
  readonly db: Db;
  removeJobFiles(jobId: string): Promise<void>;
}

export interface RecipientKey {
  jobId: string;
  idx: number;
}

/** One send call's worth of claimed work: due recipients of one job, sharing a sendId. */
export interface ClaimedGroup {
  job: Job;
  recipients: Recipient[];
  sendId: string;
}

export interface ClaimOptions {
  /** At most this many faxes in flight per destination number across all jobs and all instances (default 1). */
  perNumber?: number;
  /** Jobs scheduled further ahead than this are not claimed yet (default 24 h). */
  scheduleHorizonMs?: number;
  /**
   * When given and no recipient was due: filled with the numbers at their limit (perNumber) then.
   * A job that arrives for those numbers only cannot be claimed before one of their faxes ends,
   * so the dispatcher does not look for work on its account (dispatcher.ts wake).
   */
  blocked?: Set<string>;
}

/** What the service reported about a fax, recorded on its recipient. */
export interface FaxResultFields {
  messageId?: string | null;
  resultCode?: string | null;
  resultInfo?: string | null;
  errorCode?: string | null;
  errorInfo?: string | null;
  pagesComplete?: number | null;
  pagesCount?: number | null;
  duration?: number | null;
  faxAttempt?: number | null;
}

/** A deferral: `expect` and `sendId` guard against a stale caller; `faxTry` counts a failed fax result. */
export interface DeferOptions {
  error: string;
  nextAttemptAt: Date;
  sendId?: string;
  faxTry?: boolean;
  refundAttempt?: boolean;
  expect?: RecipientState[];
}

/** A recipient given up on, with the reason people will read. */
export interface FailOptions {
  reason: string;
  fields?: FaxResultFields;
  sendId?: string;
  expect?: RecipientState[];
}

/**
 * The durable queue, as every stage sees it: intake, dispatch, notify, the CLI and the web console.
 * Two implementations: SQLite (one box, the default) and PostgreSQL (several gateways sharing one
 * queue). Every method is asynchronous so that both fit; a resolved promise means committed.
 * Each transition method's allowed from-states come from `transitions.ts`, never from the caller's
 * own list, except where `expect` narrows them further.
 */
export interface QueueStore extends ReceivedStore {
  readonly backend: "sqlite" | "postgres";
  /** The query layer's port (sql/db.ts), for rooms with tables of their own (the ledger). */
  readonly sql: Db;
  /**
   * PostgreSQL's pool, for the counters a fleet shares through rate-limiter-flexible
   * (src/fleet-counter.ts); null on SQLite, where one gateway's own counters are the fleet's.
   */
  readonly fleetPool: pg.Pool | null;

  // ---- intake
  /** Durable when it resolves: documents stored (fsynced, or in the database), job row committed. */
  /**
   * With `ledger`: the rows it makes for the new job are appended in the job's own commit (none
   * for a duplicate), so a job never stands without its rows, nor rows without their job.
   */
  enqueue(job: NewJob, ledger?: JobLedgerRows): Promise<{ job: Job; duplicate: boolean }>;
  /** Keeps unprocessable input for inspection (state corrupt), never deletes it. */
  enqueueCorrupt(input: {
    source: JobSource;
    user: string;
    reason: string;
    original: NewDocument;
    meta?: JobMeta;
  }): Promise<Job>;
  /** Called after each new job is committed by this process (not for duplicates). */
  onEnqueued(fn: (job: Job) => void): () => void;

  // ---- reading
  getJob(id: string): Promise<Job | null>;
  listJobs(filter?: JobFilter): Promise<Job[]>;
  /** How many jobs match (the same filter without limit/offset), for paging. */
  countJobs(filter?: JobFilter): Promise<number>;
  counts(): Promise<QueueCounts>;
  /** The recipient's (and job's) history, oldest first. */
  listEvents(jobId: string): Promise<JobEvent[]>;
  /** A stored document's bytes (the send, the console's download and preview). */
  readDocument(doc: StoredDocument): Promise<Buffer>;
  /** A local file with the document's bytes (SQLite: the file itself; PostgreSQL: a cached copy). */
  documentPath(doc: StoredDocument): Promise<string>;
  /** The local folder of a job's files, removed with the job (a reply sheet is kept there). */
  jobFilesDir(jobId: string): string;

  // ---- dispatcher
  /** Claims due recipients grouped per job (one send call each), `sending` under a lease, committed before any HTTP call. */
  claimDue(owner: string, limit: number, leaseMs: number, opts?: ClaimOptions): Promise<ClaimedGroup[]>;
  extendLease(owner: string, keys: RecipientKey[], leaseMs: number): Promise<void>;
  /** `sending` rows whose lease ran out become `unknown`; `all` (SQLite only, under the daemon lock) treats every lease as expired. */
  releaseExpired(opts?: { all?: boolean }): Promise<{ unknown: number; released: number }>;
  releaseOwner(owner: string): Promise<number>;
  /**
   * The claimed send's call is about to leave (committed before the request): true, or false when
   * the claim was taken back meanwhile (the call must not be made). sql/leases.ts markCallLeaving.
   */
  markCallLeaving(owner: string, sendId: string, keys: RecipientKey[]): Promise<boolean>;
  markAccepted(
    key: RecipientKey,
    sendId: string,
    fields: FaxResultFields & { messageId: string },
    apiCalls?: number,
  ): Promise<boolean>;
  markUnknown(key: RecipientKey, sendId: string, error: string): Promise<boolean>;
  postponeUnknown(key: RecipientKey, sendId: string, error: string, nextAttemptAt: Date): Promise<boolean>;
  defer(key: RecipientKey, opts: DeferOptions): Promise<boolean>;
  fail(key: RecipientKey, opts: FailOptions): Promise<boolean>;
  complete(key: RecipientKey, fields: FaxResultFields): Promise<boolean>;
  recordProgress(key: RecipientKey, fields: FaxResultFields): Promise<void>;
  addApiCalls(keys: RecipientKey[], calls: number): Promise<void>;
  /** Faxes at the service not finished (`processing`), or unknown sends made, and unknown since, before `sentBefore` (now minus the reconcile grace) and due. */
  listRecipients(filter: RecipientFilter): Promise<Array<Recipient & { user: string }>>;
  isKnownMessage(messageId: string): Promise<boolean>;
  wakeDeferred(user: string, errorPrefix: string): Promise<number>;
  nextDueAt(): Promise<string | null>;

  // ---- operators (the CLI and the console)
  /**
   * An operator's step on every recipient of the job it may move: retry, cancel, hold, release.
   * `by` names who did it in the job's timeline ("alice", "bob, an operator"); default an operator.
   * Refused (JOB_STATE, saying why) when nothing moves.
   */
  operate(id: string, step: OperatorStep, by?: string): Promise<Job>;
  /**
   * Gives a job that waits for an address (NewJob.awaitingAddress) its numbers and cover: its
   * placeholder becomes the first recipient, queued. Refused when it no longer waits.
   */
  address(id: string, input: { recipients: NewRecipient[]; cover: CoverSpec }): Promise<Job>;
  /** Ends (cancelled) the jobs created before `before` that still wait for an address or confirmation; answers them. */
  expireWaiting(what: OwnerWait, before: Date, reason: string): Promise<Job[]>;
  /** Which of `numbers` (E.164) `user` has faxed before: the service took a fax to it (sql/waiting.ts). */
  faxedNumbers(user: string, numbers: readonly string[]): Promise<string[]>;
  /**
   * Queues every recipient of a job that waits for its owner's confirmation (NewJob.awaitingConfirmation);
   * `moved` 0 when nothing waited any more (confirmed, cancelled or expired meanwhile). `by` names
   * who confirmed, for the timeline.
   */
  confirm(id: string, by: string): Promise<{ job: Job; moved: number }>;
  /** The query layer for retention and legal holds (store/sql/retention.ts). */
  retentionPort(): RetentionPort;
  /** The query layer the fleet's shared budget lives in (store/sql/fleet-budget.ts): PostgreSQL only, null on SQLite. */
  fleetDb(): Db | null;
  /** Removes final jobs older than the retention; returns how many. */
  purge(olderThanMs: number): Promise<number>;

  // ---- notifications (each mailed once, whichever instance claims it)
  enqueueNotification(n: NewNotification): Promise<{ id: number; duplicate: boolean }>;
  claimNotifications(owner: string, limit: number, leaseMs: number): Promise<Notification[]>;
  completeNotification(id: number, state: "sent" | "skipped"): Promise<void>;
  deferNotification(id: number, error: string, nextAttemptAt: Date): Promise<void>;
  failNotification(id: number, error: string): Promise<void>;
  listNotifications(filter?: { jobId?: string; kind?: string; user?: string }): Promise<Notification[]>;

  // ---- small durable key/value state (inbound cursor per user, first-start markers...)
  getState(key: string): Promise<string | null>;
  setState(key: string, value: string): Promise<void>;

  // ---- the replay record of signed mail (signed-uses.ts, mail-auth/replay.ts)
  /**
   * Records that a signed message is used for these numbers, in one transaction with the check
   * that no other claimant used it for one of them (or for the whole message) already: then the
   * answer says when. Two gateways racing for one message: one wins.
   */
  useSignedMessage(use: SignedUse): Promise<SignedUseAnswer>;
  /** Gives a claim back: its message's job was not made (the sender may try again). */
  releaseSignedMessage(claim: string): Promise<void>;

  // ---- one instance at a time
  /**
   * Whether this process holds the named duty (inbound poller, key watch, purge). SQLite: always
   * true (the daemon lock already makes it the only one). PostgreSQL: a session advisory lock,
   * taken if free; it passes to another instance when this one dies.
   */
  holdsDuty(duty: string): Promise<boolean>;

  close(): Promise<void>;
}
