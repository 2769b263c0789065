// The store reads a database file's page size instead of assuming SQLite's default (4 KB, what a
// new faxgate.db gets): a file made with other pages (by the sqlite3 shell with its own default, or
// converted) works as before, and its WAL is checkpointed by the bytes committed (checkpointer.ts).
import Database from "better-sqlite3";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Checkpointer } from "../../src/store/sqlite/checkpointer.js";
import { migrate } from "../../src/store/sqlite/migrations.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { waitUntil } from "../helpers/cli.js";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const pageSize = (file: string): number => {
  const db = new Database(file, { readonly: true });
  try {
    return Number(db.pragma("page_size", { simple: true }));
  } finally {
    db.close();
  }
};

describe("the queue database's page size", () => {
  it("a new store's file has SQLite's default pages, in WAL mode", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-pages-"));
    const store = SqliteStore.open({ dataDir: dir });
    await store.setState("k", "v");
    await store.close();
    const file = path.join(dir, "faxgate.db");
    expect(pageSize(file)).toBe(4096);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    raw.close();
  });

  it("a file made with 8 KB pages keeps them: its jobs' documents are stored, checkpointed and read back", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-pages-"));
    const file = path.join(dir, "faxgate.db");
    // made elsewhere with other pages: WAL, every step of the schema
    mkdirSync(path.join(dir, "documents"), { recursive: true });
    const other = new Database(file);
    other.pragma("page_size = 8192");
    other.pragma("journal_mode = WAL");
    migrate(other);
    other.close();
    expect(pageSize(file)).toBe(8192);

    const store = SqliteStore.open({ dataDir: dir, dedupeWindowMs: -1, threadsNow: true });
    const cp = (store as unknown as { checkpoints: Checkpointer }).checkpoints;
    // 200 KB a job in the database: 30 of them make a checkpoint due (checkpointer.ts)
    const jobs = [];
    for (let i = 0; i < 30; i += 1) {
      const data = Buffer.alloc(200 * 1024, i);
      const { job } = await store.enqueue({
        source: "cli",
        user: "alice",
        recipients: [{ number: "+15551234567" }],
        documents: [{ path: `/nowhere/${i}.pdf`, name: "letter.pdf", contentType: "application/pdf", data }],
        cover: { enabled: false },
      });
      jobs.push(job);
    }
    await waitUntil(() => cp.done >= 1, "a checkpoint by the thread", 10_000, 20);
    for (const [i, job] of jobs.entries())
      expect((await store.readDocument(job.documents[0]!)).equals(Buffer.alloc(200 * 1024, i))).toBe(true);
    await store.close();

    expect(pageSize(file)).toBe(8192);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    expect((raw.prepare("SELECT count(*) AS n FROM document_data").get() as { n: number }).n).toBe(30);
    raw.close();
  });
});
