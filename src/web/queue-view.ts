// What the console reads from the queue, through the asynchronous QueueStore contract. Until every
// backend implements search/paging/events (the store's own work), this falls back: it filters in
// memory, reads a document from its path, and makes a timeline from the recipients' own fields.
// Each fallback is used only when the store does not offer the method itself.
import { readFile } from 'node:fs/promises';
import type { QueueStore } from '../store/queue-store.js';
import type { Job, JobEvent, JobFilter, QueueCounts, StoredDocument } from '../store/types.js';

type Maybe<T> = T | Promise<T>;

/** The store as the console needs it; both the synchronous SQLite class and any QueueStore fit. */
export interface ConsoleStore {
  getJob(id: string): Maybe<Job | null>;
  listJobs(filter?: JobFilter): Maybe<Job[]>;
  counts(): Maybe<QueueCounts>;
  cancel(id: string): Maybe<Job>;
  hold(id: string): Maybe<Job>;
  release(id: string): Maybe<Job>;
  retry(id: string): Maybe<Job>;
  getState(key: string): Maybe<string | null>;
  enqueue: QueueStore['enqueue'];
  enqueueCorrupt: QueueStore['enqueueCorrupt'];
  countJobs?(filter?: JobFilter): Maybe<number>;
  listEvents?(jobId: string): Maybe<JobEvent[]>;
  readDocument?(doc: StoredDocument): Maybe<Buffer>;
}


function matches(j: Job, f: JobFilter): boolean {
  if (f.updatedSince && j.updatedAt < f.updatedSince) return false;
  if (!f.search) return true;
  const q = f.search.toLowerCase();
  const digits = q.replace(/[^\d]/g, '');
  const texts = [j.cover.subject ?? '', j.meta.origin?.subject ?? '', ...j.recipients.map((r) => r.name ?? '')];
  return (
    texts.some((t) => t.toLowerCase().includes(q)) ||
    (digits.length > 0 && /^[\d\s+().-]+$/.test(q) && j.recipients.some((r) => r.number.includes(digits)))
  );
}

export class QueueView {
  private readonly native: boolean;
  /** fallback live updates: the open jobs of the last look */
  private wereOpen = new Set<string>();

  constructor(readonly store: ConsoleStore) {
    // a store with countJobs implements search/offset/updatedSince as well (queue-store.ts)
    this.native = typeof store.countJobs === 'function';
  }

  async getJob(id: string): Promise<Job | null> {
    return this.store.getJob(id);
  }

  /** One page of jobs, newest first, and how many match in all. */
  async page(filter: JobFilter & { limit: number; offset: number }): Promise<{ jobs: Job[]; total: number }> {
    if (this.native) {
      const [jobs, total] = await Promise.all([this.store.listJobs(filter), this.store.countJobs!(filter)]);
      return { jobs, total };
    }
    const { search, updatedSince, offset, limit, ...rest } = filter;
    const all = (await this.store.listJobs({ ...rest, limit: 100_000 })).filter((j) => matches(j, { search, updatedSince }));
    return { jobs: all.slice(offset, offset + limit), total: all.length };
  }

  /** Jobs changed at or after `since` (the live updates; one caller, the live loop). */
  async changedSince(filter: JobFilter, since: string): Promise<Job[]> {
    if (this.native) return this.store.listJobs({ ...filter, updatedSince: since, limit: 500 });
    // fallback: only jobs that can still change are read (open ones, the newest), plus those that
    // were open at the last look and are not any more (a delivery, a cancel): never the whole queue
    const lists = await Promise.all([
      ...(['queued', 'active', 'held'] as const).map((state) => this.store.listJobs({ ...filter, state, limit: 100_000 })),
      this.store.listJobs({ ...filter, limit: 100 }),
    ]);
    const byId = new Map<string, Job>();
    for (const j of lists.flat()) byId.set(j.id, j);
    for (const id of this.wereOpen) {
      if (byId.has(id)) continue;
      const j = await this.store.getJob(id);
      if (j) byId.set(id, j);
    }
    this.wereOpen = new Set(lists.slice(0, 3).flat().map((j) => j.id));
    return [...byId.values()].filter((j) => j.updatedAt >= since).slice(0, 500);
  }

  async events(job: Job): Promise<JobEvent[]> {
    if (typeof this.store.listEvents === 'function') return this.store.listEvents(job.id);
    // fallback: what the job's own fields tell
    const out: JobEvent[] = [{ jobId: job.id, idx: null, at: job.createdAt, transition: 'enqueue', from: null, to: 'queued', detail: null }];
    for (const r of job.recipients) {
      if (r.sentAt) out.push({ jobId: job.id, idx: r.idx, at: r.sentAt, transition: 'accept', from: 'sending', to: 'processing', detail: r.messageId ? `the service took it (${r.messageId})` : null });
      if (r.state === 'deferred' && r.lastError) out.push({ jobId: job.id, idx: r.idx, at: r.updatedAt, transition: 'defer', from: null, to: 'deferred', detail: r.lastError });
      if (r.finishedAt) out.push({ jobId: job.id, idx: r.idx, at: r.finishedAt, transition: r.state, from: null, to: r.state, detail: r.errorInfo ?? r.resultInfo ?? r.lastError });
      else if (r.state === 'held' || r.state === 'unknown') out.push({ jobId: job.id, idx: r.idx, at: r.updatedAt, transition: r.state, from: null, to: r.state, detail: r.lastError });
    }
    return out.sort((a, b) => a.at.localeCompare(b.at));
  }

  async readDocument(doc: StoredDocument): Promise<Buffer> {
    if (typeof this.store.readDocument === 'function') return this.store.readDocument(doc);
    return readFile(doc.path);
  }
}
