// A new queue database is made with pages of NEW_DATABASE_PAGE_BYTES (open-database.ts: a mail's
// documents take fewer WAL frames and fewer pages to checkpoint); one made by an older version,
// with SQLite's default 4 KB pages, keeps them and works as before.
import Database from "better-sqlite3";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Checkpointer } from "../../src/store/sqlite/checkpointer.js";
import { migrate } from "../../src/store/sqlite/migrations.js";
import { NEW_DATABASE_PAGE_BYTES } from "../../src/store/sqlite/open-database.js";
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
  it("a new store's file has pages of NEW_DATABASE_PAGE_BYTES, in WAL mode", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-pages-"));
    expect(NEW_DATABASE_PAGE_BYTES, "not SQLite's default, which a new file would get anyway").not.toBe(4096);
    const store = SqliteStore.open({ dataDir: dir });
    await store.setState("k", "v");
    const file = path.join(dir, "faxgate.db");
    expect(pageSize(file)).toBe(NEW_DATABASE_PAGE_BYTES);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    raw.close();
    await store.close();
    // and it stays so once reopened
    const again = SqliteStore.open({ dataDir: dir });
    expect(await again.getState("k")).toBe("v");
    await again.close();
    expect(pageSize(file)).toBe(NEW_DATABASE_PAGE_BYTES);
  });

  it("a file made with 4 KB pages keeps them: its jobs' documents are stored, checkpointed and read back", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-pages-"));
    const file = path.join(dir, "faxgate.db");
    // as an older version made it: SQLite's default page size, WAL, every step of the schema
    mkdirSync(path.join(dir, "documents"), { recursive: true });
    const old = new Database(file);
    old.pragma("page_size = 4096");
    old.pragma("journal_mode = WAL");
    migrate(old);
    old.close();
    expect(pageSize(file)).toBe(4096);

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

    expect(pageSize(file)).toBe(4096);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    expect((raw.prepare("SELECT count(*) AS n FROM document_data").get() as { n: number }).n).toBe(30);
    raw.close();
  });
});
