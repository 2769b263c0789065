// SQLite rows <-> the typed objects of types.ts. States are checked as rows are read: a value the
// code does not know (a hand-edited database, a newer version's row) is an error naming it, not a
// string that silently matches no branch.
import { FaxgateError } from "../errors.js";
import type { KindAndPayload } from "./notification-payloads.js";
import {
  JOB_STATES,
  NOTIFICATION_STATES,
  RECIPIENT_STATES,
  type Job,
  type JobEvent,
  type JobSource,
  type JobState,
  type Notification,
  type NotificationState,
  type Recipient,
  type RecipientState,
} from "./types.js";

const JOB_SOURCES: readonly JobSource[] = ["smtp", "spool", "cli", "web", "imap"];

/** `value` if it is one of `known`; otherwise an error naming the column, the row and the value. */
export function checkedState<T extends string>(known: readonly T[], value: string, what: string, row: string): T {
  if ((known as readonly string[]).includes(value)) return value as T;
  throw new FaxgateError("INTERNAL", `${what} of ${row} is "${value}", which is not one of ${known.join(", ")}`);
}

export interface JobRow {
  id: string;
  source: string;
  user: string;
  state: string;
  cover: string;
  documents: string;
  original: string | null;
  scheduled_at: string | null;
  tags: string;
  dedupe_key: string | null;
  meta: string;
  corrupt_reason: string | null;
  finals: number;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface RecipientRow {
  job_id: string;
  idx: number;
  number: string;
  name: string | null;
  state: string;
  attempts: number;
  fax_tries: number;
  budget_from: string;
  next_attempt_at: string | null;
  last_error: string | null;
  message_id: string | null;
  send_id: string | null;
  result_code: string | null;
  result_info: string | null;
  error_code: string | null;
  error_info: string | null;
  pages: number | null;
  pages_count: number | null;
  duration: number | null;
  fax_attempt: number | null;
  api_calls: number;
  locked_by: string | null;
  locked_until: string | null;
  created_at: string;
  updated_at: string;
  sent_at: string | null;
  finished_at: string | null;
  /**
   * While `sending`: 0 from the claim until the send's call is about to leave, then 1 (written
   * and committed before the request). NULL: claimed by a gateway older than this column.
   */
  call_left: number | null;
}

export interface NotificationRow {
  id: number;
  kind: string;
  user: string;
  job_id: string | null;
  dedupe_key: string;
  payload: string;
  state: string;
  attempts: number;
  next_attempt_at: string;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

export interface JobEventRow {
  id: number;
  job_id: string;
  idx: number | null;
  at: string;
  transition: string;
  from_state: string | null;
  to_state: string;
  detail: string | null;
}

export function toJobEvent(e: JobEventRow): JobEvent {
  const row = `event ${e.id} of job ${e.job_id}`;
  return {
    jobId: e.job_id,
    idx: e.idx,
    at: e.at,
    transition: e.transition,
    from:
      e.from_state === null ? null : checkedState<RecipientState>(RECIPIENT_STATES, e.from_state, "from-state", row),
    to: checkedState<RecipientState | JobState>([...RECIPIENT_STATES, ...JOB_STATES], e.to_state, "to-state", row),
    detail: e.detail,
  };
}

export function toRecipient(r: RecipientRow): Recipient {
  return {
    jobId: r.job_id,
    idx: r.idx,
    number: r.number,
    name: r.name,
    state: checkedState<RecipientState>(RECIPIENT_STATES, r.state, "recipient state", `recipient ${r.job_id}/${r.idx}`),
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    messageId: r.message_id,
    sendId: r.send_id,
    resultCode: r.result_code,
    resultInfo: r.result_info,
    errorCode: r.error_code,
    errorInfo: r.error_info,
    pages: r.pages,
    duration: r.duration,
    faxAttempt: r.fax_attempt,
    lockedBy: r.locked_by,
    lockedUntil: r.locked_until,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    sentAt: r.sent_at,
    finishedAt: r.finished_at,
    faxTries: r.fax_tries,
    pagesCount: r.pages_count,
    apiCalls: r.api_calls,
    budgetFrom: r.budget_from,
  };
}

export function toJob(j: JobRow, recipients: Recipient[]): Job {
  return {
    id: j.id,
    source: checkedState<JobSource>(JOB_SOURCES, j.source, "job source", `job ${j.id}`),
    user: j.user,
    state: checkedState<JobState>(JOB_STATES, j.state, "job state", `job ${j.id}`),
    cover: JSON.parse(j.cover),
    documents: JSON.parse(j.documents),
    original: j.original ? JSON.parse(j.original) : null,
    scheduledAt: j.scheduled_at,
    tags: JSON.parse(j.tags),
    dedupeKey: j.dedupe_key,
    meta: JSON.parse(j.meta),
    corruptReason: j.corrupt_reason,
    createdAt: j.created_at,
    updatedAt: j.updated_at,
    finishedAt: j.finished_at,
    recipients,
  };
}

export function toNotification(n: NotificationRow): Notification {
  // kind is not checked here: the notifier skips an unknown kind with a log line, so one odd row
  // does not stop the rest of the queue from being claimed
  const kindAndPayload = { kind: n.kind, payload: JSON.parse(n.payload) } as KindAndPayload;
  return {
    id: n.id,
    ...kindAndPayload,
    user: n.user,
    jobId: n.job_id,
    dedupeKey: n.dedupe_key,
    state: checkedState<NotificationState>(NOTIFICATION_STATES, n.state, "notification state", `notification ${n.id}`),
    attempts: n.attempts,
    nextAttemptAt: n.next_attempt_at,
    lastError: n.last_error,
    createdAt: n.created_at,
    sentAt: n.sent_at,
  };
}

/** Times are compared as text in SQL: "…T10:00:00+01:00" must be stored as "…T09:00:00.000Z". */
export function isoUtc(at: string | null | undefined): string | null {
  if (!at) return null;
  const t = Date.parse(at);
  return Number.isNaN(t) ? at : new Date(t).toISOString();
}
