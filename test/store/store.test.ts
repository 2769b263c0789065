import Database from "better-sqlite3";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isFaxgateError } from "../../src/errors.js";
import { JOB_ID_PATTERN } from "../../src/store/job-id.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { SMALL_DOCUMENT_BYTES } from "../../src/store/types.js";
import { PURGE_BATCH } from "../../src/store/sqlite/operator.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { docFile, manualClock, newJob, tempStore, type TempStore } from "../helpers/store.js";

let t: TempStore;
afterEach(() => t?.cleanup());

const key = (jobId: string, idx = 0) => ({ jobId, idx });

async function expectCode(fn: () => unknown, code: string): Promise<void> {
  try {
    await fn();
  } catch (err) {
    expect(isFaxgateError(err) && err.code).toBe(code);
    return;
  }
  throw new Error(`expected ${code}`);
}

describe("enqueue", () => {
  it("keeps a small document given as bytes in the database: no folder, its bytes read back, a spoiled copy written again, purged with its job", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const src = docFile(t.dir, "the caller's copy");
    const big = Buffer.alloc(SMALL_DOCUMENT_BYTES + 1, 0x41);
    const { job } = await t.store.enqueue(
      newJob(t.dir, {
        documents: [
          { path: src, name: "page.txt", contentType: "text/plain", data: Buffer.from("a small page"), move: true },
          { path: path.join(t.dir, "never-written.pdf"), name: "big.pdf", contentType: "application/pdf", data: big },
        ],
      }),
    );
    const [small, large] = job.documents;
    expect(small!.bytes).toBe(12);
    // kept in the database: nothing on disk for it; the big one is a file in the job's folder
    expect(existsSync(small!.path)).toBe(false);
    expect(readFileSync(large!.path).equals(big)).toBe(true);
    // given with move: the caller's file goes once the job is committed
    expect(existsSync(src)).toBe(false);
    expect((await t.store.readDocument(small!)).toString()).toBe("a small page");
    // written out for whoever reads files, and again over a copy spoiled meanwhile
    const p = await t.store.documentPath(small!);
    expect(readFileSync(p, "utf8")).toBe("a small page");
    writeFileSync(p, "spoiled");
    expect(readFileSync(await t.store.documentPath(small!), "utf8")).toBe("a small page");
    // another process sees it too
    expect((await t.reopen().readDocument(small!)).toString()).toBe("a small page");
    // a job of small documents only has no folder at all until one is asked for
    const { job: only } = await t.store.enqueue(
      newJob(t.dir, {
        documents: [
          { path: path.join(t.dir, "x.txt"), name: "x.txt", contentType: "text/plain", data: Buffer.from("x") },
        ],
      }),
    );
    expect(existsSync(path.join(t.dir, "data", "documents", only.id))).toBe(false);
    // purged with its job
    await t.store.cancel(job.id);
    await t.store.cancel(only.id);
    for (const x of await t.store.claimNotifications("n", 10, 1000)) await t.store.completeNotification(x.id, "sent");
    clock.advance(10 * 86_400_000);
    expect(await t.store.purge(7 * 86_400_000)).toBe(2);
    const db = new Database(path.join(t.dir, "data", "faxgate.db"), { readonly: true });
    try {
      expect(db.prepare("SELECT count(*) AS n FROM document_data").get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    expect(readdirSync(path.join(t.dir, "data", "documents"))).toEqual([]);
  });

  it("stores the documents and the row durably, ids are sortable and safe", async () => {
    t = tempStore();
    const src = docFile(t.dir, "hello fax");
    const { job, duplicate } = await t.store.enqueue(
      newJob(t.dir, {
        documents: [{ path: src, name: "../../etc/evil name.pdf", contentType: "application/pdf" }],
        recipients: [{ number: "+15551230001", name: "Bob" }, { number: "+15551230002" }, { number: "+15551230001" }],
        meta: { origin: { messageId: "<x@y>" } },
      }),
    );
    expect(duplicate).toBe(false);
    expect(job.id).toMatch(JOB_ID_PATTERN);
    expect(job.state).toBe("queued");
    // duplicates of a number collapse to one recipient
    expect(job.recipients.map((r) => r.number)).toEqual(["+15551230001", "+15551230002"]);
    const doc = job.documents[0]!;
    expect(path.dirname(doc.path)).toBe(path.join(t.dir, "data", "documents", job.id));
    expect(readFileSync(doc.path, "utf8")).toBe("hello fax");
    expect(doc.bytes).toBe(9);
    expect(existsSync(src)).toBe(true); // copied, not moved
    expect(readdirSync(path.dirname(doc.path)).some((n) => n.endsWith(".tmp"))).toBe(false);
    // Another process sees it (row committed)
    const other = t.reopen();
    expect((await other.getJob(job.id))?.meta.origin?.messageId).toBe("<x@y>");
    const second = await t.store.enqueue(newJob(t.dir));
    expect(second.job.id > job.id).toBe(true);
  });

  it("commits intake without waiting for the disk but flushes before it answers, and every other write stays synchronous=FULL", async () => {
    t = tempStore();
    const db = (t.store as unknown as { db: Database.Database }).db;
    const FULL = 2;
    expect(db.pragma("synchronous", { simple: true })).toBe(FULL);
    const { job } = await t.store.enqueue(newJob(t.dir));
    expect(db.pragma("synchronous", { simple: true })).toBe(FULL);
    // the WAL holds the commit (no checkpoint yet), and another connection reads it
    expect(readFileSync(path.join(t.dir, "data", "faxgate.db-wal")).length).toBeGreaterThan(0);
    expect((await t.reopen().getJob(job.id))?.state).toBe("queued");
    // a duplicate answered from an earlier job leaves it as it was, too
    await t.store.enqueue(newJob(t.dir, { dedupeKey: "k" }));
    await t.store.enqueue(newJob(t.dir, { dedupeKey: "k" }));
    expect(db.pragma("synchronous", { simple: true })).toBe(FULL);
  });

  it("moves documents when asked", async () => {
    t = tempStore();
    const src = docFile(t.dir);
    const { job } = await t.store.enqueue(
      newJob(t.dir, { documents: [{ path: src, name: "a.pdf", contentType: "application/pdf", move: true }] }),
    );
    expect(existsSync(src)).toBe(false);
    expect(existsSync(job.documents[0]!.path)).toBe(true);
  });

  it("a moved file flushed by its writer keeps the size it was given; one that was not is measured", async () => {
    t = tempStore();
    const flushed = docFile(t.dir);
    const plain = docFile(t.dir);
    const { job } = await t.store.enqueue(
      newJob(t.dir, {
        documents: [
          {
            path: flushed,
            name: "a.pdf",
            contentType: "application/pdf",
            move: true,
            flushedBytes: statSync(flushed).size,
          },
          { path: plain, name: "b.pdf", contentType: "application/pdf", move: true },
        ],
      }),
    );
    expect(job.documents.map((d) => d.bytes)).toEqual(job.documents.map((d) => statSync(d.path).size));
    expect(job.documents.every((d) => d.bytes > 0)).toBe(true);
  });

  it("a job whose documents cannot all be placed puts the ones already moved back where they were", async () => {
    t = tempStore();
    const moved = docFile(t.dir);
    const before = readFileSync(moved);
    const missing = path.join(t.dir, "gone.pdf");
    await expect(
      t.store.enqueue(
        newJob(t.dir, {
          documents: [
            { path: moved, name: "a.pdf", contentType: "application/pdf", move: true, flushedBytes: before.length },
            { path: missing, name: "b.pdf", contentType: "application/pdf" },
          ],
        }),
      ),
    ).rejects.toThrow(/a document could not be stored/);
    expect(readFileSync(moved)).toEqual(before);
    expect(readdirSync(path.join(t.dir, "data", "documents"))).toEqual([]);
    expect(await t.store.listJobs()).toHaveLength(0);
  });

  it("returns the existing job for a dedupeKey inside the window and stores nothing", async () => {
    const clock = manualClock();
    t = tempStore({ clock, dedupeWindowMs: 60_000 });
    const first = await t.store.enqueue(newJob(t.dir, { dedupeKey: "mail:<a@b>" }));
    const again = await t.store.enqueue(newJob(t.dir, { dedupeKey: "mail:<a@b>" }));
    expect(again.duplicate).toBe(true);
    expect(again.job.id).toBe(first.job.id);
    expect(readdirSync(path.join(t.dir, "data", "documents"))).toEqual([first.job.id]);
    expect(await t.store.listJobs()).toHaveLength(1);
    clock.advance(61_000);
    const later = await t.store.enqueue(newJob(t.dir, { dedupeKey: "mail:<a@b>" }));
    expect(later.duplicate).toBe(false);
    expect(later.job.id).not.toBe(first.job.id);
  });

  it("tells onEnqueued listeners of each new job after it is committed, not of duplicates", async () => {
    t = tempStore();
    const seen: Array<{ id: string; stored: boolean }> = [];
    const off = t.store.onEnqueued(async (job) =>
      seen.push({ id: job.id, stored: (await t.store.getJob(job.id)) !== null }),
    );
    const first = await t.store.enqueue(newJob(t.dir, { dedupeKey: "mail:<wake@b>" }));
    await t.store.enqueue(newJob(t.dir, { dedupeKey: "mail:<wake@b>" }));
    off();
    await t.store.enqueue(newJob(t.dir));
    expect(seen).toEqual([{ id: first.job.id, stored: true }]);
  });

  it("keeps corrupt input with its reason and enqueues one rejected notice", async () => {
    t = tempStore();
    const orig = docFile(t.dir, "garbage");
    const job = await t.store.enqueueCorrupt({
      source: "spool",
      user: "alice",
      reason: "not a PDF",
      original: { path: orig, name: "x.bin", contentType: "application/octet-stream" },
    });
    expect(job.state).toBe("corrupt");
    expect(job.corruptReason).toBe("not a PDF");
    expect(readFileSync(job.original!.path, "utf8")).toBe("garbage");
    const notes = await t.store.listNotifications({ jobId: job.id });
    expect(notes.map((n) => [n.kind, n.dedupeKey])).toEqual([["rejected", `rejected:${job.id}`]]);
    await expectCode(() => t.store.retry(job.id), "JOB_STATE");
  });

  it("sweeps document folders left by a crash before the commit, but not young ones", () => {
    const clock = manualClock(Date.now());
    t = tempStore({ clock });
    const docs = path.join(t.dir, "data", "documents");
    for (const name of ["FGOLDORPHAN00000", "FGYOUNGORPHAN000"]) {
      mkdirSync(path.join(docs, name));
      writeFileSync(path.join(docs, name, "01-a.pdf"), "x");
    }
    const old = (Date.now() - 2 * 3600_000) / 1000;
    utimesSync(path.join(docs, "FGOLDORPHAN00000"), old, old);
    t.reopen();
    expect(readdirSync(docs).sort()).toEqual(["FGYOUNGORPHAN000"]);
  });
});

describe("dispatcher transitions", () => {
  it("derives job states, enqueues exactly one outcome notice when final", async () => {
    t = tempStore();
    const { job } = await t.store.enqueue(
      newJob(t.dir, { recipients: [{ number: "+15551230001" }, { number: "+15551230002" }] }),
    );
    const [g] = await t.store.claimDue("me", 10, 60_000);
    expect(g!.recipients).toHaveLength(2);
    expect((await t.store.getJob(job.id))!.state).toBe("active");
    expect(
      (await t.store.getJob(job.id))!.recipients.every(
        (r) => r.state === "sending" && r.sendId === g!.sendId && r.lockedBy === "me",
      ),
    ).toBe(true);
    expect(await t.store.markAccepted(key(job.id, 0), g!.sendId, { messageId: "m1" })).toBe(true);
    expect(await t.store.markAccepted(key(job.id, 0), "other-send", { messageId: "m9" })).toBe(false); // stale caller
    expect(
      await t.store.complete(key(job.id, 0), {
        resultCode: "0",
        resultInfo: "OK",
        pagesComplete: 2,
        duration: 40,
        faxAttempt: 1,
      }),
    ).toBe(true);
    expect(await t.store.listNotifications({ jobId: job.id })).toHaveLength(0);
    expect(await t.store.fail(key(job.id, 1), { reason: "busy (3 tries)", sendId: g!.sendId })).toBe(true);
    const done = (await t.store.getJob(job.id))!;
    expect(done.state).toBe("partial");
    expect(done.finishedAt).not.toBeNull();
    expect(done.recipients[0]).toMatchObject({
      state: "delivered",
      messageId: "m1",
      pages: 2,
      duration: 40,
      faxAttempt: 1,
    });
    expect(done.recipients[1]).toMatchObject({ state: "failed", lastError: "busy (3 tries)" });
    const notes = await t.store.listNotifications({ jobId: job.id });
    expect(notes.map((n) => n.dedupeKey)).toEqual([`outcome:${job.id}`]);
    expect(notes[0]!.payload).toEqual({ jobId: job.id });
    // A direct second enqueue with the same key is ignored.
    expect(
      (
        await t.store.enqueueNotification({
          kind: "outcome",
          user: "alice",
          jobId: job.id,
          dedupeKey: `outcome:${job.id}`,
          payload: { jobId: job.id },
        })
      ).duplicate,
    ).toBe(true);
    // After a retry, finishing again gets its own notice.
    await t.store.retry(job.id);
    const [g2] = await t.store.claimDue("me", 10, 60_000);
    expect(g2!.recipients.map((r) => r.idx)).toEqual([1]);
    await t.store.fail(key(job.id, 1), { reason: "no answer" });
    expect(
      (await t.store.listNotifications({ jobId: job.id, kind: "outcome" })).map((n) => n.dedupeKey).sort(),
    ).toEqual([`outcome:${job.id}`, `outcome:${job.id}:2`]);
  });

  it("claims only due work, one fax per number in flight, write-ahead", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const a = (await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15550000001" }] }))).job;
    const b = (await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15550000001" }] }))).job;
    const c = (
      await t.store.enqueue(
        newJob(t.dir, {
          recipients: [{ number: "+15550000002" }],
          scheduledAt: new Date(clock.now() + 48 * 3600_000).toISOString(),
        }),
      )
    ).job;
    const groups = await t.store.claimDue("me", 10, 60_000);
    expect(groups.map((g) => g.job.id)).toEqual([a.id]); // b waits for the same number, c is far in the future
    // committed before any call: another connection sees `sending`
    expect((await t.reopen().getJob(a.id))!.recipients[0]!.state).toBe("sending");
    expect(await t.store.claimDue("me", 10, 60_000)).toEqual([]);
    await t.store.defer(key(a.id), {
      error: "API_SERVER: 503",
      nextAttemptAt: new Date(clock.now() + 30_000),
      sendId: groups[0]!.sendId,
    });
    expect((await t.store.claimDue("me", 10, 60_000)).map((g) => g.job.id)).toEqual([b.id]);
    await t.store.complete(key(b.id), { resultCode: "0" });
    expect(await t.store.claimDue("me", 10, 60_000)).toEqual([]); // a is deferred until later
    clock.advance(31_000);
    expect((await t.store.claimDue("me", 10, 60_000)).map((g) => g.job.id)).toEqual([a.id]);
    clock.advance(47 * 3600_000);
    expect((await t.store.claimDue("me", 10, 60_000)).map((g) => g.job.id)).toEqual([c.id]);
  });

  it("releaseExpired turns a crashed send into unknown, never back into queued", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const { job } = await t.store.enqueue(newJob(t.dir));
    const [g] = await t.store.claimDue("dead-process", 5, 10_000);
    clock.advance(5_000);
    await t.store.extendLease("dead-process", [key(job.id)], 10_000);
    clock.advance(9_000);
    expect((await t.store.releaseExpired()).unknown).toBe(0); // lease was renewed
    clock.advance(2_000);
    expect((await t.store.releaseExpired()).unknown).toBe(1);
    const r = (await t.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("unknown");
    expect(r.sendId).toBe(g!.sendId);
    expect(await t.store.claimDue("me", 5, 10_000)).toEqual([]);
    // The owner may still report back with the same sendId (it was slow, not dead).
    expect(await t.store.markAccepted(key(job.id), g!.sendId, { messageId: "m1" })).toBe(true);
  });

  it("a 429 deferral does not use up a try", async () => {
    t = tempStore();
    const { job } = await t.store.enqueue(newJob(t.dir));
    const [g] = await t.store.claimDue("me", 5, 10_000);
    await t.store.defer(key(job.id), {
      error: "429",
      nextAttemptAt: new Date(0),
      sendId: g!.sendId,
      refundAttempt: true,
    });
    expect((await t.store.getJob(job.id))!.recipients[0]!.attempts).toBe(0);
  });
});

describe("operator operations", () => {
  it("cancel, hold, release, retry and their refusals", async () => {
    t = tempStore();
    const { job } = await t.store.enqueue(
      newJob(t.dir, { recipients: [{ number: "+15551230001" }, { number: "+15551230002" }] }),
    );
    expect((await t.store.hold(job.id)).state).toBe("held");
    expect(await t.store.claimDue("me", 5, 10_000)).toEqual([]);
    await expectCode(() => t.store.hold(job.id), "JOB_STATE");
    expect((await t.store.release(job.id)).state).toBe("queued");
    await expectCode(() => t.store.release(job.id), "JOB_STATE");
    await expectCode(() => t.store.retry(job.id), "JOB_STATE");
    const [g] = await t.store.claimDue("me", 5, 10_000, { perNumber: 1 });
    await t.store.markAccepted(key(job.id, 0), g!.sendId, { messageId: "m1" });
    await t.store.defer(key(job.id, 1), {
      error: "x",
      nextAttemptAt: new Date(Date.now() + 3600_000),
      sendId: g!.sendId,
    });
    const cancelled = await t.store.cancel(job.id);
    expect(cancelled.recipients.map((r) => r.state)).toEqual(["processing", "cancelled"]); // in-flight one is left to finish
    expect(cancelled.state).toBe("active");
    await expectCode(() => t.store.cancel(job.id), "JOB_STATE");
    await t.store.complete(key(job.id, 0), { resultCode: "0" });
    expect((await t.store.getJob(job.id))!.state).toBe("partial");
    const retried = await t.store.retry(job.id);
    expect(retried.state).toBe("active");
    expect(retried.finishedAt).toBeNull();
    expect(retried.recipients[1]).toMatchObject({ state: "queued", attempts: 0, faxTries: 0 });
    await expectCode(() => t.store.cancel("FGNOSUCHJOB00000"), "JOB_NOT_FOUND");
    expect(await t.store.getJob("nope")).toBeNull();
  });

  it("purges final jobs older than the cutoff, rows and folders", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const old = (await t.store.enqueue(newJob(t.dir))).job;
    const [g] = await t.store.claimDue("me", 5, 10_000);
    await t.store.markAccepted(key(old.id), g!.sendId, { messageId: "m1" });
    await t.store.complete(key(old.id), { resultCode: "0" });
    const open = (await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15559990000" }] }))).job;
    clock.advance(10 * 86_400_000);
    const recent = (await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15559990001" }] }))).job;
    await t.store.cancel(recent.id);
    // A job whose notice is not mailed yet stays: the notifier still reads it.
    expect(await t.store.purge(7 * 86_400_000)).toBe(0);
    for (const n of await t.store.claimNotifications("n", 10, 1000)) await t.store.completeNotification(n.id, "sent");
    expect(await t.store.purge(7 * 86_400_000)).toBe(1);
    expect(await t.store.getJob(old.id)).toBeNull();
    expect(existsSync(path.dirname(old.documents[0]!.path))).toBe(false);
    expect(await t.store.getJob(open.id)).not.toBeNull(); // not final: never purged
    expect((await t.store.getJob(recent.id))!.state).toBe("cancelled");
  });

  it("purges more jobs than one batch takes, in batches, every row and folder", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const n = PURGE_BATCH * 2 + 7;
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1) {
      const { job } = await t.store.enqueue(newJob(t.dir));
      await t.store.cancel(job.id);
      ids.push(job.id);
    }
    for (const x of await t.store.claimNotifications("n", n * 2, 1000))
      await t.store.completeNotification(x.id, "sent");
    clock.advance(10 * 86_400_000);
    const kept = (await t.store.enqueue(newJob(t.dir))).job;
    expect(await t.store.purge(7 * 86_400_000)).toBe(n);
    expect(await t.store.countJobs()).toBe(1);
    expect(readdirSync(path.join(t.dir, "data", "documents"))).toEqual([kept.id]);
  });

  it("counts by state, oldest active age, pending notifications; listJobs filters", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    await t.store.enqueue(newJob(t.dir));
    await t.store.enqueue(newJob(t.dir, { user: "bob", source: "smtp", recipients: [{ number: "+15551239999" }] }));
    clock.advance(90_000);
    const c = await t.store.counts();
    expect(c.jobs.queued).toBe(2);
    expect(c.recipients.queued).toBe(2);
    expect(c.oldestActiveAgeSeconds).toBe(90);
    expect(c.notificationsPending).toBe(0);
    expect((await t.store.listJobs({ user: "bob" })).map((j) => j.source)).toEqual(["smtp"]);
    expect(await t.store.listJobs({ state: "queued", source: "cli" })).toHaveLength(1);
    expect(await t.store.listJobs({ state: "delivered" })).toHaveLength(0);
  });
});

describe("notifications and key/value state", () => {
  it("leases, defers, fails and completes notifications", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const payload = {
      messageId: "m1",
      status: "success",
      from: "+15550001111",
      csid: null,
      pages: 1,
      duration: 30,
      createdAt: null,
      resultCode: "0",
      resultInfo: "OK",
      errorCode: null,
      errorInfo: null,
    };
    const n = await t.store.enqueueNotification({ kind: "inbound", user: "alice", dedupeKey: "inbound:m1", payload });
    expect(n.duplicate).toBe(false);
    const [claimed] = await t.store.claimNotifications("w1", 10, 30_000);
    expect(claimed).toMatchObject({ id: n.id, attempts: 1, payload: { messageId: "m1" } });
    expect(await t.store.claimNotifications("w2", 10, 30_000)).toEqual([]); // leased
    await t.store.deferNotification(n.id, "smtp down", new Date(clock.now() + 60_000));
    expect(await t.store.claimNotifications("w2", 10, 30_000)).toEqual([]);
    clock.advance(61_000);
    expect((await t.store.claimNotifications("w2", 10, 30_000))[0]!.attempts).toBe(2);
    await t.store.completeNotification(n.id, "sent");
    clock.advance(3600_000);
    expect(await t.store.claimNotifications("w2", 10, 30_000)).toEqual([]);
    expect((await t.store.counts()).notificationsPending).toBe(0);
  });

  it("key/value state survives a reopen", async () => {
    t = tempStore();
    await t.store.setState("inbound:alice", "cursor-1");
    await t.store.setState("inbound:alice", "cursor-2");
    expect(await t.reopen().getState("inbound:alice")).toBe("cursor-2");
    expect(await t.store.getState("nope")).toBeNull();
  });
});

describe("states read back from rows", () => {
  it("the schema refuses a state it does not know, written by hand", async () => {
    t = tempStore();
    const { job } = await t.store.enqueue(newJob(t.dir));
    const n = await t.store.enqueueNotification({
      kind: "outcome",
      user: "alice",
      jobId: job.id,
      dedupeKey: "x",
      payload: { jobId: job.id },
    });
    const raw = new Database(path.join(t.dir, "data", "faxgate.db"));
    try {
      expect(() => raw.prepare("UPDATE recipients SET state = 'teleported' WHERE job_id = ?").run(job.id)).toThrow(
        /CHECK constraint failed/,
      );
      expect(() => raw.prepare("UPDATE jobs SET state = 'lost' WHERE id = ?").run(job.id)).toThrow(
        /CHECK constraint failed/,
      );
      expect(() => raw.prepare("UPDATE jobs SET source = 'fax' WHERE id = ?").run(job.id)).toThrow(
        /CHECK constraint failed/,
      );
      expect(() => raw.prepare("UPDATE notifications SET state = 'maybe' WHERE id = ?").run(n.id)).toThrow(
        /CHECK constraint failed/,
      );
      // a legal state still goes in by hand
      raw.prepare("UPDATE recipients SET state = 'held' WHERE job_id = ?").run(job.id);
      expect((await t.store.getJob(job.id))!.recipients[0]!.state).toBe("held");
    } finally {
      raw.close();
    }
  });

  it("an unknown state in a row is an error naming it, for recipients, jobs and notifications", async () => {
    t = tempStore();
    const { job } = await t.store.enqueue(newJob(t.dir));
    const n = await t.store.enqueueNotification({
      kind: "outcome",
      user: "alice",
      jobId: job.id,
      dedupeKey: "x",
      payload: { jobId: job.id },
    });
    const raw = new Database(path.join(t.dir, "data", "faxgate.db"));
    // a row the schema would refuse today (a newer version's, or one from before the CHECKs)
    raw.pragma("ignore_check_constraints = ON");
    try {
      raw.prepare("UPDATE recipients SET state = 'teleported' WHERE job_id = ?").run(job.id);
      await expect(t.store.getJob(job.id)).rejects.toThrow(`recipient state of recipient ${job.id}/0 is "teleported"`);
      raw.prepare("UPDATE recipients SET state = 'queued' WHERE job_id = ?").run(job.id);
      raw.prepare("UPDATE jobs SET state = 'lost' WHERE id = ?").run(job.id);
      await expect(t.store.getJob(job.id)).rejects.toThrow(`job state of job ${job.id} is "lost"`);
      raw.prepare("UPDATE jobs SET state = 'queued' WHERE id = ?").run(job.id);
      expect((await t.store.getJob(job.id))!.state).toBe("queued");
      raw.prepare("UPDATE notifications SET state = 'maybe' WHERE id = ?").run(n.id);
      await expect(t.store.listNotifications({ jobId: job.id })).rejects.toThrow(
        `notification state of notification ${n.id} is "maybe"`,
      );
    } finally {
      raw.close();
    }
  });
});

describe("migrations and several processes", () => {
  it("opens an existing file at an older version and upgrades it, keeping data", async () => {
    t = tempStore();
    await t.store.setState("k", "v");
    t.store.close();
    const file = path.join(t.dir, "data", "faxgate.db");
    const db = new Database(file);
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    db.close();
    const again = t.reopen();
    expect(await again.getState("k")).toBe("v");
    // A brand-new file at version 0 gets every step.
    const fresh = SqliteStore.open({ dataDir: path.join(t.dir, "fresh") });
    const raw = new Database(path.join(t.dir, "fresh", "faxgate.db"));
    expect(raw.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    raw.close();
    fresh.close();
  });

  it("two stores on one file never claim the same recipient", async () => {
    t = tempStore();
    const other = t.reopen();
    for (let i = 0; i < 30; i++)
      await t.store.enqueue(newJob(t.dir, { recipients: [{ number: `+1555100${String(i).padStart(4, "0")}` }] }));
    const a = await t.store.claimDue("a", 7, 60_000);
    const b = await other.claimDue("b", 100, 60_000);
    const ids = [...a, ...b].map((g) => g.job.id);
    expect(a).toHaveLength(7);
    expect(b).toHaveLength(23);
    expect(new Set(ids).size).toBe(30);
    // operator op from the second process is seen by the first
    const target = b[0]!.job.id;
    await other.markAccepted(key(target), b[0]!.sendId, { messageId: "mx" });
    expect((await t.store.getJob(target))!.recipients[0]!.state).toBe("processing");
  });
});
