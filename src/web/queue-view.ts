// What the console reads from the queue, through the asynchronous QueueStore contract: one page
// of a user's jobs with the number that match (search and paging done by the store), the jobs
// changed since a time (live updates), a job's timeline and its documents' bytes.
import type { QueueStore, Job, JobEvent, JobFilter, StoredDocument } from "../store/index.js";

/** The store as the console uses it. */
export type ConsoleStore = Pick<
  QueueStore,
  | "getJob"
  | "listJobs"
  | "countJobs"
  | "listEvents"
  | "readDocument"
  | "counts"
  | "operate"
  | "getState"
  | "enqueue"
  | "enqueueCorrupt"
  | "address"
  | "confirm"
  | "enqueueNotification"
  | "keepReceived"
  | "getReceived"
  | "listReceived"
  | "readReceivedDocument"
  | "changeReceived"
  | "listReceivedEvents"
  | "listNotifications"
  | "purgeReceived"
  | "sql"
>;

export class QueueView {
  constructor(readonly store: ConsoleStore) {}

  getJob(id: string): Promise<Job | null> {
    return this.store.getJob(id);
  }

  /** One page of jobs, newest first, and how many match in all. */
  async page(filter: JobFilter & { limit: number; offset: number }): Promise<{ jobs: Job[]; total: number }> {
    const [jobs, total] = await Promise.all([this.store.listJobs(filter), this.store.countJobs(filter)]);
    return { jobs, total };
  }

  /** Jobs changed at or after `since` (the live updates). */
  changedSince(filter: JobFilter, since: string): Promise<Job[]> {
    return this.store.listJobs({ ...filter, updatedSince: since, limit: 500 });
  }

  events(job: Job): Promise<JobEvent[]> {
    return this.store.listEvents(job.id);
  }

  readDocument(doc: StoredDocument): Promise<Buffer> {
    return this.store.readDocument(doc);
  }
}
