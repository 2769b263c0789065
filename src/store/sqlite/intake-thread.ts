// The intake writer's thread (intake-writer.ts says why and how): each job's statements, the jobs
// that arrive while it works committed together (each in a savepoint of its own), then the WAL
// fdatasynced and the data folder checked writable before anyone is told. A job's original is
// kept without its documents' base64 here (../sql/enqueue.ts spliceRequest), as it arrives and
// outside the commit, rather than on the main thread, which every SMTP session waits on.
import fs from "node:fs";
import type Database from "better-sqlite3";
import { type Spliced, spliceRequest } from "../sql/enqueue.js";
import { appendLedgerSync } from "../sql/ledger.js";
import { threadDb, type DbThreadData } from "./db-thread.js";
import { MAX_BATCH, type Answer, type Answers, type Envelope, type FlushFailure } from "./intake-writer.js";

const { db, port, data } = threadDb<DbThreadData & { dataDir: string }>();
// the commit does not wait for the disk: the WAL is flushed after it, off the lock (flushWal below)
db.pragma("synchronous = NORMAL");
db.pragma("foreign_keys = ON");
// checkpoints are the checkpoint thread's (checkpointer.ts), never this connection's
db.pragma("wal_autocheckpoint = 0");
port.postMessage("ready");

const statements = new Map<string, Database.Statement>();
const sql = (text: string): Database.Statement => {
  let s = statements.get(text);
  if (!s) {
    if (statements.size >= 200) statements.clear();
    s = db.prepare(text);
    statements.set(text, s);
  }
  return s;
};

const runOne = db.transaction((r: Envelope): { found?: Record<string, unknown> } => {
  if (r.guard) {
    const row = sql(r.guard[0]).get(...r.guard[1]) as Record<string, unknown> | undefined;
    if (row) return { found: row };
  }
  for (const [text, params] of r.statements) sql(text).run(...params);
  // the job's ledger rows in its own savepoint: the head read here, after the rows before it
  for (const fields of r.ledger ?? []) appendLedgerSync(sql, fields);
  return {};
});

/** A request as it waits for the next commit: its buffers (to go back) and what splicing took out. */
interface Pending {
  r: Envelope;
  spent: ArrayBuffer[];
  spliced?: Spliced;
}

function pendingOf(r: Envelope): Pending {
  // the bytes given, before a splice replaces the original's with what it keeps
  const spent: ArrayBuffer[] = [];
  for (const [, params] of r.statements)
    for (const p of params) if (p instanceof Uint8Array) spent.push(p.buffer as ArrayBuffer);
  let cut: ReturnType<typeof spliceRequest> = null;
  try {
    cut = spliceRequest(r);
  } catch {
    // the original is then kept whole, which is always right
  }
  if (!cut) return { r, spent };
  return { r: { ...r, statements: cut.statements }, spent, spliced: cut.spliced };
}

// each request in a savepoint of its own (a transaction inside a transaction), all in one commit
const runBatch = db.transaction((ps: Pending[]): Answer[] =>
  ps.map(({ r, spliced }) => {
    try {
      const done = runOne(r);
      return done.found
        ? { seq: r.seq, ok: true, found: done.found }
        : { seq: r.seq, ok: true, ...(spliced ? { spliced } : {}) };
    } catch (err) {
      return { seq: r.seq, ok: false, error: String((err as Error)?.message ?? err) };
    }
  }),
);

// The WAL on disk, then the data folder still writable, as context.ts flushWal: kept open, as
// SQLite removes the WAL only when the last connection closes.
let walFd: number | null = null;
function flushWal(): FlushFailure | null {
  let step: FlushFailure["step"] = "sync";
  try {
    if (walFd === null) walFd = fs.openSync(`${data.file}-wal`, "r");
    fs.fdatasyncSync(walFd);
    step = "access";
    fs.accessSync(data.dataDir, fs.constants.W_OK);
    return null;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // no WAL: a checkpoint copied and synced everything, and the last connection closed it
    if (walFd === null && e.code === "ENOENT") return null;
    return { step, ...(e.code ? { code: e.code } : {}), message: String(e.message) };
  }
}

const pending: Pending[] = [];
let scheduled = false;
function flush(): void {
  scheduled = false;
  const rs = pending.splice(0, MAX_BATCH);
  if (pending.length > 0) {
    scheduled = true;
    setImmediate(flush);
  }
  let answers: Answer[];
  try {
    answers = runBatch.immediate(rs);
    // committed; now on disk before anyone is told (the lock is free meanwhile)
    const notFlushed = flushWal();
    if (notFlushed) for (const a of answers) if (a.ok) a.notFlushed = notFlushed;
  } catch (err) {
    const error = String((err as Error)?.message ?? err);
    answers = rs.map(({ r }) => ({ seq: r.seq, ok: false, error }));
  }
  // the bytes are in the database now (SQLite copies what it binds): their buffers go back for reuse
  const spent = new Set<ArrayBuffer>();
  for (const p of rs) for (const b of p.spent) spent.add(b);
  const message: Answers = { answers, spent: [...spent] };
  port.postMessage(message, message.spent);
}

port.on("message", (m: Envelope | "close") => {
  if (m === "close") {
    db.close();
    if (walFd !== null) fs.closeSync(walFd);
    port.close();
    return;
  }
  pending.push(pendingOf(m));
  // the requests that arrive while this turn of the thread's loop lasts are committed together
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
});
