// WAL checkpoints run on a thread of their own (src/store/sqlite/checkpointer.ts), not inside the
// main thread's commits, where they held every SMTP session for up to 130 ms.
import Database from "better-sqlite3";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/logger.js";
import { CHECKPOINT_EVERY_BYTES, COMMIT_PAGES, Checkpointer } from "../../src/store/sqlite/checkpointer.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { waitUntil } from "../helpers/cli.js";

/** Commits of a few pages each that make one checkpoint due, in a database with pages of `pageSize`. */
const commitsPerCheckpoint = (pageSize: number): number =>
  Math.ceil(CHECKPOINT_EVERY_BYTES / (COMMIT_PAGES * pageSize));
/** A new store's file has SQLite's default page size. */
const STORE_PAGE_BYTES = 4096;
/** The same in a database the store made. */
const CHECKPOINT_EVERY_COMMITS = commitsPerCheckpoint(STORE_PAGE_BYTES);

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("WAL checkpoints", () => {
  it("are not the main connection's: the thread copies the WAL into the database file, and the WAL is gone after close", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-ckpt-"));
    const store = SqliteStore.open({ dataDir: dir });
    const db = (store as unknown as { db: Database.Database }).db;
    const cp = (store as unknown as { checkpoints: Checkpointer }).checkpoints;
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    const file = path.join(dir, "faxgate.db");
    const before = statSync(file).size;
    // enough commits for a few checkpoints, each with a few pages of its own
    const payload = {
      messageId: "m",
      status: "success",
      from: "+15550001111",
      csid: "x".repeat(3000),
      pages: 1,
      duration: 30,
      createdAt: null,
      resultCode: "0",
      resultInfo: "OK",
      errorCode: null,
      errorInfo: null,
    };
    let n = 0;
    const commit = async (count: number): Promise<void> => {
      for (const end = n + count; n < end; n += 1)
        await store.enqueueNotification({ kind: "inbound", user: "alice", dedupeKey: `inbound:${n}`, payload });
    };
    await commit(CHECKPOINT_EVERY_COMMITS * 3);
    await waitUntil(() => cp.done >= 1, "a checkpoint by the thread", 10_000, 20);
    // Only the thread can grow the database file: the main connection's checkpoints are off. A
    // PASSIVE checkpoint never waits, so one that met a busy moment (seen once in a loaded CI run)
    // copies nothing: more commits bring the next one, a few rounds at most.
    for (let round = 0; round < 10 && statSync(file).size <= before; round += 1) {
      const done = cp.done;
      await commit(CHECKPOINT_EVERY_COMMITS);
      await waitUntil(() => cp.done > done, "the next checkpoint by the thread", 10_000, 20);
    }
    expect(statSync(file).size, "the database file holds the copied pages").toBeGreaterThan(before);
    await store.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
    const again = new Database(file, { readonly: true });
    expect((again.prepare("SELECT count(*) AS n FROM notifications").get() as { n: number }).n).toBe(n);
    again.close();
  });

  it("count the documents a commit keeps in the database: a few jobs of small mail make one due", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-ckpt-"));
    const store = SqliteStore.open({ dataDir: dir, dedupeWindowMs: -1 });
    const cp = (store as unknown as { checkpoints: Checkpointer }).checkpoints;
    // 200 KB a job, kept in the database (SMALL_DOCUMENT_BYTES), so 25 jobs are past
    // CHECKPOINT_EVERY_BYTES where counting commits alone would wait for CHECKPOINT_EVERY_COMMITS
    const data = Buffer.alloc(200 * 1024, 0x25);
    for (let i = 0; i < 25; i += 1) {
      await store.enqueue({
        source: "cli",
        user: "alice",
        recipients: [{ number: "+15551234567" }],
        documents: [{ path: `/nowhere/${i}.pdf`, name: "letter.pdf", contentType: "application/pdf", data }],
        cover: { enabled: false },
      });
    }
    expect(25 * (COMMIT_PAGES * STORE_PAGE_BYTES + data.length)).toBeGreaterThan(CHECKPOINT_EVERY_BYTES);
    expect(25).toBeLessThan(CHECKPOINT_EVERY_COMMITS);
    await waitUntil(() => cp.done >= 1, "a checkpoint by the thread", 10_000, 20);
    await store.close();
  });

  it("make the WAL start again from its beginning under a steady stream of mail: it does not grow with every byte committed", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-ckpt-"));
    const store = SqliteStore.open({ dataDir: dir, dedupeWindowMs: -1, threadsNow: true });
    const cp = (store as unknown as { checkpoints: Checkpointer }).checkpoints;
    const wal = path.join(dir, "faxgate.db-wal");
    // 20 senders at once, each job 150 KB in the database: some 120 MB committed in all, with no
    // pause in which a checkpoint could find every frame copied by itself
    const data = Buffer.alloc(150 * 1024, 0x25);
    const JOBS = 800;
    let next = 0;
    let biggest = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < JOBS) {
          const i = next++;
          await store.enqueue({
            source: "cli",
            user: "alice",
            recipients: [{ number: "+15551234567" }],
            documents: [{ path: `/nowhere/${i}.pdf`, name: "letter.pdf", contentType: "application/pdf", data }],
            cover: { enabled: false },
          });
          biggest = Math.max(biggest, statSync(wal).size);
        }
      }),
    );
    const committed = JOBS * data.length;
    expect(cp.restarts, "WAL restarts by the thread").toBeGreaterThan(0);
    // about twice the restarts' interval (16 MB), where before it grew past the whole of what was committed
    expect(biggest, `the WAL's biggest size, ${committed} bytes committed`).toBeLessThan(committed / 2);
    const counts = await store.counts();
    expect(
      Object.values(counts.jobs).reduce((a, b) => a + b, 0),
      "every job committed",
    ).toBe(JOBS);
    await store.close();
  });

  // SQLite's own interval is in pages: as many bytes between checkpoints at either page size
  it.each([
    [4096, 1000],
    [8192, 500],
  ])(
    "a thread that cannot start gives the main connection its own checkpoints back (%i-byte pages)",
    async (pageSize, pages) => {
      dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-ckpt-"));
      const db = new Database(path.join(dir, "a.db"));
      db.pragma(`page_size = ${pageSize}`);
      db.pragma("journal_mode = WAL");
      // the thread opens a file that does not exist (fileMustExist): it fails at its start
      const cp = new Checkpointer(db, path.join(dir, "missing.db"), silentLogger());
      expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
      for (let i = 0; i < commitsPerCheckpoint(pageSize); i += 1) cp.committed();
      await waitUntil(
        () => db.pragma("wal_autocheckpoint", { simple: true }) === pages,
        "SQLite's own checkpoints back",
        30_000,
        20,
      );
      expect(cp.done).toBe(0);
      await cp.close();
      db.close();
    },
  );
});
