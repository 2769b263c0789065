// Operator commands on the queue: send, jobs, job, retry|cancel|hold|release, status.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { FaxgateError } from '../errors.js';
import { acceptJob } from '../intake/accept.js';
import { checkDestination } from '../intake/destination-policy.js';
import { formatFaxNumber } from '../intake/fax-number.js';
import { newFaxDocuments, newFaxRecipients } from '../intake/new-fax.js';
import { silentLogger } from '../log/logger.js';
import { inFlightByNumber, jobJson, recipientTries, waitReason } from '../job-json.js';
import { FINAL_JOB_STATES } from '../store/transitions.js';
import { JOB_STATES, type Job, type JobState, type NewDocument, type RecipientState } from '../store/types.js';
import { OfficeConverter } from '../intake/office-convert.js';
import type { QueueStore } from '../store/queue-store.js';
import { loadContext, pickUser, printJson, printTable, withClients, withStore, type GlobalOptions } from './context.js';
import { listKeyHolds } from '../keys/key-holds.js';

export { jobJson, recipientTries };

export async function jobsCommand(opts: GlobalOptions & { state?: string; user?: string; limit?: number }): Promise<void> {
  const limit = opts.limit ?? 200;
  await withStore(loadContext(opts), async (store) => {
    const state = opts.state;
    let jobs: Job[];
    if (state === undefined || (JOB_STATES as readonly string[]).includes(state)) {
      jobs = await store.listJobs({ state: state as JobState | undefined, user: opts.user, limit });
    } else {
      // A recipient's state (deferred, sending, processing, unknown): the jobs with such a recipient.
      jobs = (await store.listJobs({ user: opts.user, limit: 100_000 }))
        .filter((j) => j.recipients.some((r) => r.state === (state as RecipientState)))
        .slice(0, limit);
    }
    const inFlight = inFlightByNumber(await store.listJobs({ state: 'active', limit: 100_000 }));
    const now = Date.now();
    if (opts.json) return printJson(jobs.map((j) => jobJson(j, inFlight, now)));
    if (jobs.length === 0) return void process.stdout.write('no jobs\n');
    printTable(
      ['JOB', 'STATE', 'SOURCE', 'USER', 'CREATED', 'RECIPIENTS'],
      jobs.map((j) => [
        j.id, j.state, j.source, j.user, j.createdAt.replace('T', ' ').slice(0, 19),
        j.recipients.map((r) => {
          const why = waitReason(j, r, now, inFlight);
          return `${formatFaxNumber(r.number)} ${r.state}${why ? ` (${why})` : ''}`;
        }).join(', '),
      ]),
    );
  });
}

export async function jobCommand(id: string, opts: GlobalOptions): Promise<void> {
  await withStore(loadContext(opts), async (store) => {
    const job = await store.getJob(id);
    if (!job) throw new FaxgateError('JOB_NOT_FOUND', `no job ${id}`);
    const inFlight = inFlightByNumber(await store.listJobs({ state: 'active', limit: 100_000 }));
    const now = Date.now();
    if (opts.json) return printJson(jobJson(job, inFlight, now));
    const out = [
      `job       ${job.id}`,
      `state     ${job.state}`,
      `source    ${job.source} (user ${job.user})`,
      `created   ${job.createdAt}${job.finishedAt ? `, finished ${job.finishedAt}` : ''}`,
      job.scheduledAt ? `scheduled ${job.scheduledAt}` : '',
      `cover     ${job.cover.enabled ? `yes${job.cover.subject ? `, subject "${job.cover.subject}"` : ''}` : 'no'}`,
      `documents ${job.documents.map((d) => `${d.name} (${d.bytes} bytes)`).join(', ') || '(none)'}`,
      ...(job.meta.leftOut ?? []).map((l) => `left out  ${l.name}: ${l.reason}`),
      job.corruptReason ? `corrupt   ${job.corruptReason}` : '',
      'recipients:',
      ...job.recipients.map((r) => {
        // a deferred recipient's "next try" is on the line already
        const reason = waitReason(job, r, now, inFlight);
        const why = reason?.startsWith('next try') ? null : reason;
        return (
          `  ${formatFaxNumber(r.number).padEnd(18)} ${r.state.padEnd(10)} tries ${recipientTries(r)}` +
          `${r.messageId ? `  message ${r.messageId}` : ''}${r.pages != null ? `  ${r.pages} pages` : ''}` +
          `${r.errorInfo || r.lastError ? `  (${r.errorInfo ?? r.lastError})` : ''}${r.nextAttemptAt && r.state === 'deferred' ? `  next try ${r.nextAttemptAt}` : ''}` +
          `${why ? `  waiting: ${why}` : ''}`
        );
      }),
    ];
    process.stdout.write(`${out.filter(Boolean).join('\n')}\n`);
  });
}

export async function jobOpCommand(op: 'retry' | 'cancel' | 'hold' | 'release', id: string, opts: GlobalOptions): Promise<void> {
  await withStore(loadContext(opts), async (store) => {
    const job = await store[op](id);
    if (opts.json) return printJson(jobJson(job));
    process.stdout.write(`${job.id}: ${job.state}\n`);
  });
}

export interface SendOptions extends GlobalOptions {
  to: string[];
  cover?: boolean;
  subject?: string;
  notes?: string;
  user?: string;
  wait?: boolean;
}

export async function sendCommand(files: string[], opts: SendOptions): Promise<number> {
  const ctx = loadContext(opts);
  const user = pickUser(ctx, opts.user);
  const recipients = await newFaxRecipients({
    to: opts.to,
    user: user.name,
    defaultCountryCode: ctx.config.smtp?.defaultCountryCode ?? '1',
    destinations: (name, e164) => checkDestination(e164, ctx.config.destinations, name === user.name ? user : { name }),
    label: (t) => `--to ${t}`,
  });
  if (recipients.length === 0) throw new FaxgateError('USAGE', 'give at least one --to NUMBER');
  for (const f of files) {
    if (!existsSync(f) || !statSync(f).isFile()) throw new FaxgateError('USAGE', `${f}: no such file`);
  }
  // office documents are converted to PDF here, as mail and print-folder files are
  let converter: OfficeConverter | null = null;
  let documents: NewDocument[];
  try {
    const byPath = new Map(files.map((f) => [path.resolve(f), f]));
    documents = await newFaxDocuments(
      files.map((f) => ({ path: path.resolve(f), name: path.basename(f) })),
      () => (converter ??= new OfficeConverter(ctx.config.office)),
      (u) => byPath.get(u.path) ?? u.name,
    );
  } finally {
    await (converter as OfficeConverter | null)?.close();
  }
  const cover = opts.cover === true || documents.length === 0;
  if (documents.length === 0 && !opts.subject && !opts.notes && opts.cover !== true) {
    throw new FaxgateError('NOTHING_TO_FAX', 'nothing to fax: give a file, or --cover with --subject/--notes');
  }
  return withStore(ctx, async (store) => {
    // the same accept step as mail and print (stdout carries only the command's own answer)
    const { job } = await acceptJob({ store, log: silentLogger() }, {
      source: 'cli',
      user: user.name,
      recipients,
      documents,
      cover: { enabled: cover, subject: opts.subject, notes: opts.notes },
      meta: { origin: { command: 'faxgate send' } },
    });
    process.stdout.write(opts.json && !opts.wait ? `${JSON.stringify(jobJson(job))}\n` : `queued as ${job.id}\n`);
    return opts.wait ? waitForJob(store, job.id, opts) : 0;
  });
}

/** Shows each change of the job's recipients until it is final; exit code 0 only if delivered. */
async function waitForJob(store: QueueStore, id: string, opts: SendOptions): Promise<number> {
  let last = '';
  for (;;) {
    const job = await store.getJob(id);
    if (!job) throw new FaxgateError('JOB_NOT_FOUND', `job ${id} disappeared from the queue`);
    const line = job.recipients.map((r) => `${formatFaxNumber(r.number)} ${r.state}${r.errorInfo ? ` (${r.errorInfo})` : ''}`).join(', ');
    if (line !== last) {
      process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${job.id} ${job.state}: ${line}\n`);
      last = line;
    }
    if ((FINAL_JOB_STATES as readonly string[]).includes(job.state)) {
      if (opts.json) printJson(jobJson(job));
      return job.state === 'delivered' ? 0 : 1;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function statusCommand(opts: GlobalOptions): Promise<number> {
  const ctx = loadContext(opts);
  const counts = await withStore(ctx, (store) => store.counts());
  const keysHeld = await withStore(ctx, (store) => listKeyHolds(store, ctx.config.users.map((u) => u.name)));
  let api: { ok: boolean; detail?: string };
  try {
    await withClients(ctx, async (c) => {
      await c.forUser().ping();
    });
    api = { ok: true };
  } catch (err) {
    api = { ok: false, detail: (err as Error).message };
  }
  const report = { jobs: counts.jobs, recipients: counts.recipients, oldestActiveAgeSeconds: counts.oldestActiveAgeSeconds, notificationsPending: counts.notificationsPending, api, keysHeld };
  if (opts.json) printJson(report);
  else {
    const nonzero = (o: Record<string, number>) => Object.entries(o).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    process.stdout.write(
      [
        `jobs:          ${nonzero(counts.jobs)}`,
        `recipients:    ${nonzero(counts.recipients)}`,
        `oldest active: ${counts.oldestActiveAgeSeconds === null ? '-' : `${Math.round(counts.oldestActiveAgeSeconds)} s`}`,
        `notifications: ${counts.notificationsPending} pending`,
        `fax service:   ${api.ok ? 'reachable' : `NOT reachable: ${api.detail}`}`,
        ...keysHeld.map((h) => `KEY REFUSED:   ${h.user} since ${h.since}: faxes held until a working key is loaded (${h.reason})`),
      ].join('\n') + '\n',
    );
  }
  return api.ok && keysHeld.length === 0 ? 0 : 1;
}
