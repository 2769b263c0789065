// SQLite rows <-> the typed objects of types.ts.
import type { Job, JobSource, JobState, Notification, NotificationKind, Recipient, RecipientState } from './types.js';

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

export function toRecipient(r: RecipientRow): Recipient {
  return {
    jobId: r.job_id,
    idx: r.idx,
    number: r.number,
    name: r.name,
    state: r.state as RecipientState,
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
    source: j.source as JobSource,
    user: j.user,
    state: j.state as JobState,
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
  return {
    id: n.id,
    kind: n.kind as NotificationKind,
    user: n.user,
    jobId: n.job_id,
    dedupeKey: n.dedupe_key,
    payload: JSON.parse(n.payload),
    state: n.state as Notification['state'],
    attempts: n.attempts,
    nextAttemptAt: n.next_attempt_at,
    lastError: n.last_error,
    createdAt: n.created_at,
    sentAt: n.sent_at,
  };
}
