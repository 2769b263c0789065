// The checkpoint thread (checkpointer.ts says why and how): a PASSIVE checkpoint on each
// 'checkpoint'; on 'finish', once everything is copied, the one write that restarts the WAL.
import { threadDb } from "./db-thread.js";
import { WAL_SIZE_LIMIT_BYTES, type Reply } from "./checkpointer.js";

const { db, port } = threadDb();
// The restart's own commit need not be flushed (it changes nothing anyone was promised); the
// WAL's new header is fsynced by SQLite all the same.
db.pragma("synchronous = NORMAL");
// a WAL that grew while nothing restarted it (an older version, a burst of other commits) is cut
// back to this when it restarts
db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
// one read now opens the WAL and its index: every descriptor the thread will hold, held from here
db.prepare("SELECT count(*) FROM sqlite_master").get();
// A write finding every frame copied restarts the WAL (SQLite's walRestartLog): this one row.
const restart = db.prepare(
  "INSERT INTO kv (key, value) VALUES ('wal-restarted-at', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
);

port.on("message", (m: "checkpoint" | "finish" | "close") => {
  if (m === "close") {
    db.close();
    port.close();
    return;
  }
  try {
    const [r] = db.pragma("wal_checkpoint(PASSIVE)") as Array<{ busy: number; log: number; checkpointed: number }>;
    let restarted = false;
    if (m === "finish" && r!.busy === 0 && r!.log > 0 && r!.checkpointed === r!.log) {
      restart.run(new Date().toISOString());
      restarted = true;
    }
    port.postMessage({ ok: true, log: r!.log, checkpointed: r!.checkpointed, restarted } satisfies Reply);
  } catch (err) {
    port.postMessage({ ok: false, error: String((err as Error)?.message ?? err) } satisfies Reply);
  }
});
