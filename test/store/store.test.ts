// What only the SQLite store does: documents in folders, the intake commit and its flush, purge
// batches, CHECKs and rows read back, upgrades of old files, several processes on one file.
// Everything both backends promise is in contract.test.ts, the one place shared cases live.
import Database from "better-sqlite3";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { SMALL_DOCUMENT_BYTES } from "../../src/store/types.js";
import { PURGE_BATCH } from "../../src/store/sql/operator.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { docFile, manualClock, newJob, tempStore, type TempStore } from "../helpers/store.js";

let t: TempStore;
afterEach(() => t?.cleanup());

const key = (jobId: string, idx = 0) => ({ jobId, idx });

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
    await t.store.operate(job.id, "cancel");
    await t.store.operate(only.id, "cancel");
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

  it("keeps a job's documents in its own folder, copied with a safe name and no temp file; a duplicate stores none", async () => {
    t = tempStore();
    const src = docFile(t.dir, "hello fax");
    const job = (
      await t.store.enqueue(
        newJob(t.dir, {
          documents: [{ path: src, name: "../../etc/evil name.pdf", contentType: "application/pdf" }],
          dedupeKey: "mail:<a@b>",
        }),
      )
    ).job;
    const doc = job.documents[0]!;
    expect(path.dirname(doc.path)).toBe(path.join(t.dir, "data", "documents", job.id));
    expect(readFileSync(doc.path, "utf8")).toBe("hello fax");
    expect(existsSync(src)).toBe(true); // copied, not moved
    expect(readdirSync(path.dirname(doc.path)).some((n) => n.endsWith(".tmp"))).toBe(false);
    const again = await t.store.enqueue(newJob(t.dir, { dedupeKey: "mail:<a@b>" }));
    expect(again.duplicate).toBe(true);
    expect(readdirSync(path.join(t.dir, "data", "documents"))).toEqual([job.id]);
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

describe("purge", () => {
  it("purges more jobs than one batch takes, in batches, every row and folder", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const n = PURGE_BATCH * 2 + 7;
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1) {
      const { job } = await t.store.enqueue(newJob(t.dir));
      await t.store.operate(job.id, "cancel");
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

describe("the dispatcher's looks at the queue", () => {
  it("a claim or a lease sweep that finds nothing does not wait for another writer's lock", async () => {
    t = tempStore();
    const { job } = await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15551230001" }] }));
    const [g] = await t.store.claimDue("me", 1, 60_000);
    expect(g!.job.id).toBe(job.id);
    // another process (intake's thread, another gateway) holds the write lock, as while it commits
    const other = new Database(path.join(t.dir, "data", "faxgate.db"));
    other.exec("BEGIN IMMEDIATE");
    try {
      // the only recipient is in flight and no lease has run out: these used to wait here for the
      // lock (busy_timeout, 10 s, with the event loop stopped) and then fail with SQLITE_BUSY
      expect(await t.store.claimDue("me", 5, 60_000)).toEqual([]);
      expect(await t.store.releaseExpired()).toEqual({ unknown: 0, released: 0 });
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
  });
});
