// The one door into the PostgreSQL queue: a job with its recipients, documents (bytea) and first
// event in one transaction, deduplicated per dedupeKey across instances; and corrupt input kept
// for inspection with its rejected notice.
import { promises as fsp } from "node:fs";
import { FaxgateError } from "../../errors.js";
import { safeFileName } from "../durable-files.js";
import { newJobId } from "../job-id.js";
import { isoUtc } from "../rows.js";
import { confirmationWait, enqueueDetail, NEEDS_ADDRESS } from "../transitions.js";
import type { Job, JobMeta, JobSource, NewDocument, NewJob } from "../types.js";
import { lockKey, notifyJob, type PgContext, type Q } from "./context.js";
import { loadDocument } from "./documents.js";
import { appendEvent } from "./events.js";
import { insertNotification } from "./notifications.js";
import { readJob } from "./read.js";

const originalName = (d: NewDocument): string => `00-original-${safeFileName(d.name, 0).slice(3)}`;

export async function enqueue(ctx: PgContext, input: NewJob): Promise<{ job: Job; duplicate: boolean }> {
  const waiting = input.awaitingAddress === true;
  if (input.recipients.length === 0 && !waiting)
    throw new FaxgateError("NO_DESTINATION", "a job needs at least one recipient");
  const confirming = !waiting && (input.awaitingConfirmation?.length ?? 0) > 0;
  const state = waiting || confirming ? "held" : "queued";
  const id = newJobId(ctx.clock.now());
  const loaded = await Promise.all(input.documents.map((d, i) => loadDocument(d, safeFileName(d.name, i + 1))));
  const orig = input.original ? await loadDocument(input.original, originalName(input.original)) : null;
  const numbers = new Set<string>();
  const recipients = waiting
    ? [{ number: "", name: undefined }]
    : input.recipients.filter((r) => !numbers.has(r.number) && numbers.add(r.number));
  const result = await ctx.tx("the job could not be stored", async (c) => {
    if (input.dedupeKey) {
      // Two instances receiving the same mail at once: the key's lock makes one wait for the other.
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey(`dedupe:${input.dedupeKey}`)]);
      const dup = await findDuplicate(ctx, c, input.dedupeKey);
      if (dup) return { job: dup, duplicate: true };
    }
    const now = ctx.now();
    await c.query(
      `INSERT INTO jobs (id, source, "user", state, cover, documents, original, scheduled_at, tags, dedupe_key, meta, created_at, updated_at)
       VALUES ($1, $2, $3, $12, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
      [
        id,
        input.source,
        input.user,
        JSON.stringify(input.cover),
        JSON.stringify(loaded.map((l) => l.stored)),
        orig ? JSON.stringify(orig.stored) : null,
        isoUtc(input.scheduledAt),
        JSON.stringify(input.tags ?? []),
        input.dedupeKey ?? null,
        JSON.stringify(input.meta ?? {}),
        now,
        state,
      ],
    );
    await c.query(
      `INSERT INTO recipients (job_id, idx, number, name, state, last_error, budget_from, created_at, updated_at)
       SELECT $1, i - 1, n, nm, $5, e, $2, $2, $2 FROM unnest($3::text[], $4::text[], $6::text[]) WITH ORDINALITY AS t(n, nm, e, i)`,
      [
        id,
        now,
        recipients.map((r) => r.number),
        recipients.map((r) => r.name ?? null),
        state,
        recipients.map((r) =>
          waiting ? NEEDS_ADDRESS : confirming ? confirmationWait(input.awaitingConfirmation!, r.number) : null,
        ),
      ],
    );
    for (const d of [...(orig ? [orig] : []), ...loaded])
      await c.query("INSERT INTO documents (job_id, file, data) VALUES ($1, $2, $3)", [id, d.stored.path, d.data]);
    await appendEvent(ctx, c, {
      jobId: id,
      idx: null,
      transition: "enqueue",
      from: null,
      to: state,
      detail: enqueueDetail(input.source, waiting, confirming),
    });
    await notifyJob(ctx, c, id);
    return { job: (await readJob(ctx, c, id))!, duplicate: false };
  });
  // The store now holds the bytes: moved sources go (as the SQLite store moves them away).
  for (const d of [...input.documents, ...(input.original ? [input.original] : [])]) {
    if (d.move) await fsp.unlink(d.path).catch(() => undefined);
  }
  return result;
}

async function findDuplicate(ctx: PgContext, c: Q, key: string): Promise<Job | null> {
  const since = new Date(ctx.clock.now() - ctx.dedupeWindowMs).toISOString();
  const r = await c.query<{ id: string }>(
    "SELECT id FROM jobs WHERE dedupe_key = $1 AND created_at >= $2 ORDER BY created_at DESC LIMIT 1",
    [key, since],
  );
  return r.rows[0] ? readJob(ctx, c, r.rows[0].id) : null;
}

export async function enqueueCorrupt(
  ctx: PgContext,
  input: { source: JobSource; user: string; reason: string; original: NewDocument; meta?: JobMeta },
): Promise<Job> {
  const id = newJobId(ctx.clock.now());
  const orig = await loadDocument(input.original, originalName(input.original));
  const job = await ctx.tx("the rejected input could not be stored", async (c) => {
    const now = ctx.now();
    await c.query(
      `INSERT INTO jobs (id, source, "user", state, cover, documents, original, tags, meta, corrupt_reason, created_at, updated_at, finished_at)
       VALUES ($1, $2, $3, 'corrupt', $4, '[]', $5, '[]', $6, $7, $8, $8, $8)`,
      [
        id,
        input.source,
        input.user,
        JSON.stringify({ enabled: false }),
        JSON.stringify(orig.stored),
        JSON.stringify(input.meta ?? {}),
        input.reason,
        now,
      ],
    );
    await c.query("INSERT INTO documents (job_id, file, data) VALUES ($1, $2, $3)", [id, orig.stored.path, orig.data]);
    await appendEvent(ctx, c, {
      jobId: id,
      idx: null,
      transition: "corrupt",
      from: null,
      to: "corrupt",
      detail: input.reason,
    });
    await insertNotification(ctx, c, {
      kind: "rejected",
      user: input.user,
      jobId: id,
      dedupeKey: `rejected:${id}`,
      payload: { jobId: id, reason: input.reason },
    });
    return (await readJob(ctx, c, id))!;
  });
  if (input.original.move) await fsp.unlink(input.original.path).catch(() => undefined);
  return job;
}
