// Run: SQLITE_TMPDIR=DIR node --import tsx test/helpers/sqlite-temp-child.ts control|store
// control: a bare connection (SQLite's defaults) whose savepoint journal outgrows 64 KiB, which
// SQLite spills to a file in SQLITE_TMPDIR. store: jobs with documents kept in the database,
// enqueued many at once (the intake thread commits them together, a savepoint each). Prints
// "done" when it is through.
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { bytesJob } from "./store.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-sqtemp-"));
try {
  if (process.argv[2] === "control") {
    const db = new Database(path.join(dir, "bare.db"));
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE t (x BLOB)");
    db.prepare("INSERT INTO t VALUES (?)").run(Buffer.alloc(200_000, 1));
    db.exec("BEGIN IMMEDIATE; SAVEPOINT a; UPDATE t SET x = zeroblob(200000); RELEASE a; COMMIT");
    db.close();
  } else {
    const store = SqliteStore.open({ dataDir: dir });
    const job = (i: number, bytes: number) =>
      bytesJob(i, bytes, {
        original: {
          path: `/nowhere/${i}.eml`,
          name: "m.eml",
          contentType: "message/rfc822",
          data: Buffer.alloc(bytes + i, 0x41),
        },
      });
    for (let round = 0; round < 3; round++)
      await Promise.all(Array.from({ length: 48 }, (_, i) => store.enqueue(job(i, 200_000))));
    await store.close();
  }
  console.log("done");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
