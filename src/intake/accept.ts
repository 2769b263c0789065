// The one accept step of every intake (mail, print, command line), Postfix cleanup's last act:
// the job goes durably into the store, then QUEUED is logged with the job id and counted. The
// caller answers its client (250, done/, "queued as") only after this returns.
import { deferredChild, type Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import type { QueueStore, Job, JobMeta, JobSource, NewDocument, NewJob } from "../store/index.js";
import { safeFileName } from "./documents/file-name.js";
import type { QueuePressure } from "./queue-pressure.js";
import type { Ledger, LedgerDoor } from "../ledger/index.js";

/** The ledger's door of each queue source. */
const DOOR_OF: Readonly<Record<JobSource, LedgerDoor>> = {
  smtp: "smtp",
  spool: "print",
  cli: "cli",
  web: "console",
  imap: "mailbox",
};

export interface AcceptDeps {
  store: Pick<QueueStore, "enqueue" | "enqueueCorrupt">;
  /** Each job taken in is a ledger row per recipient, in the job's commit (docs/compliance.md). */
  ledger: Pick<Ledger, "rowsFor" | "sealSoon">;
  log: Logger;
  metrics?: Metrics;
  /** queue.maxWaiting: a full queue refuses the job as busy (QUEUE_FULL) before it is stored */
  pressure: QueuePressure;
}

export interface Accepted {
  job: Job;
  /** The same input was accepted before (dedupe key): no new fax. */
  duplicate: boolean;
  /** `log` bound to the job id, for whatever the caller logs next. */
  log: Logger;
}

/**
 * Durably queues `job`; names of its documents are made safe to leave the gateway first. A full
 * queue refuses it first (QUEUE_FULL, temporary: the sender keeps it and tries again).
 */
export async function acceptJob(
  deps: AcceptDeps,
  job: NewJob,
  fields: Record<string, unknown> = {},
): Promise<Accepted> {
  await deps.pressure.check(DOOR_OF[job.source]);
  const documents = job.documents.map((d, i) => ({ ...d, name: safeFileName(d.name, `document-${i + 1}`) }));
  // the "sent" rows commit with the job: a crash leaves neither without the other
  const { job: stored, duplicate } = await deps.store.enqueue({ ...job, documents }, (made) =>
    deps.ledger.rowsFor(
      made.recipients.map((r) => ({
        action: "sent" as const,
        actor: { kind: "person" as const, id: job.user },
        object: { kind: "recipient" as const, id: `${made.id}#${r.idx}` },
        door: DOOR_OF[job.source],
        number: r.number,
        detail: { documents: documents.length },
      })),
    ),
  );
  // sealed into the chain after the commit, not before the reply (docs/compliance.md: the window)
  if (!duplicate) deps.ledger.sealSoon();
  const log = deferredChild(deps.log, { job: stored.id });
  if (duplicate) {
    log.info(fields, "ACCEPTED duplicate delivery, no new fax");
  } else {
    deps.pressure.queued(stored.recipients.length);
    deps.metrics?.jobsEnqueued.inc({ source: job.source });
    log.info(
      {
        recipients: stored.recipients.length,
        documents: stored.documents.length,
        cover: stored.cover.enabled,
        ...fields,
      },
      "QUEUED",
    );
  }
  return { job: stored, duplicate, log };
}

/** Input that cannot be read is kept as a corrupt job for inspection, never deleted. */
export async function acceptCorrupt(
  deps: AcceptDeps,
  input: { source: JobSource; user: string; reason: string; original: NewDocument; meta?: JobMeta },
): Promise<Job> {
  const job = await deps.store.enqueueCorrupt(input);
  deps.log.warn({ job: job.id, reason: input.reason }, "REJECTED kept as corrupt");
  return job;
}
