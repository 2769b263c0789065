// Intake's commits on a thread of their own (src/store/sqlite/intake-writer.ts): each job stands
// alone in a shared commit, a job is on disk when enqueue answers, a duplicate is found inside the
// write lock, and when the thread is gone the main connection commits instead.
import Database from "better-sqlite3";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/logger.js";
import {
  CommitUncertainError,
  IntakeWriter,
  runRequest,
  SpareBuffers,
  type WriteRequest,
} from "../../src/store/sqlite/intake-writer.js";
import { newJobRequest } from "../../src/store/sql/enqueue.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { NewJob } from "../../src/store/types.js";
import { bytesJob } from "../helpers/store.js";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const job = (i: number, extra: Partial<NewJob> = {}): NewJob => bytesJob(i, 20_000, extra);

const kvInsert = (key: string): WriteRequest => ({
  statements: [["INSERT INTO kv (key, value) VALUES (?, ?)", [key, "v"]]],
});

/** A store's folder with its schema, and a writer thread of its own on it. */
async function writerOn(): Promise<{ db: Database.Database; writer: IntakeWriter; warnings: string[] }> {
  dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-iw-"));
  await SqliteStore.open({ dataDir: dir }).close();
  const db = new Database(path.join(dir, "faxgate.db"));
  db.pragma("busy_timeout = 10000");
  const { log, warnings } = warningLog();
  return { db, writer: new IntakeWriter(path.join(dir, "faxgate.db"), log, mainConnection(db)), warnings };
}

/** A logger that keeps the warnings' messages. */
function warningLog(): { log: ReturnType<typeof silentLogger>; warnings: string[] } {
  const warnings: string[] = [];
  return {
    log: { ...silentLogger(), warn: (_o: unknown, msg?: string) => warnings.push(String(msg)) } as ReturnType<
      typeof silentLogger
    >,
    warnings,
  };
}

/** Requests run on `db` itself, as the store's main connection runs them without the thread. */
const mainConnection = (db: Database.Database) => (r: WriteRequest) =>
  db.transaction(() => runRequest((t) => db.prepare(t), r)).immediate();

describe("the intake writer thread", () => {
  it("commits the requests that reach it together, each standing alone: one that fails takes no other with it", async () => {
    const { db, writer } = await writerOn();
    const requests = Array.from({ length: 30 }, (_, i) =>
      i === 10
        ? ({
            statements: [...kvInsert("k10").statements, ["INSERT INTO no_such_table VALUES (1)", []]],
          } as WriteRequest)
        : kvInsert(`k${i}`),
    );
    const settled = await Promise.allSettled(requests.map((r) => writer.run(r)));
    expect(settled.filter((s) => s.status === "rejected")).toHaveLength(1);
    expect(String((settled[10] as PromiseRejectedResult).reason)).toMatch(/no_such_table/);
    for (const s of settled) if (s.status === "fulfilled") expect(s.value).toEqual({ flushed: true });
    const keys = (db.prepare("SELECT key FROM kv WHERE key LIKE 'k%'").all() as Array<{ key: string }>).map(
      (r) => r.key,
    );
    // k10's first statement went with its savepoint
    expect(keys.sort()).toEqual(
      requests
        .map((_, i) => `k${i}`)
        .filter((k) => k !== "k10")
        .sort(),
    );
    await writer.close();
    db.close();
  });

  it("answers with the guard's row and writes nothing when the guard finds one", async () => {
    const { db, writer } = await writerOn();
    await writer.run(kvInsert("there"));
    const out = await writer.run({
      guard: ["SELECT key FROM kv WHERE key = ?", ["there"]],
      statements: kvInsert("not-written").statements,
    });
    expect(out).toEqual({ found: { key: "there" }, flushed: true });
    expect(db.prepare("SELECT count(*) AS n FROM kv WHERE key = 'not-written'").get()).toEqual({ n: 0 });
    await writer.close();
    db.close();
  });

  it("when the thread stops: what it had not answered is uncertain, and later requests are committed on the main connection", async () => {
    const { db, writer, warnings } = await writerOn();
    await writer.run(kvInsert("before"));
    const worker = (writer as unknown as { worker: Worker }).worker;
    const pending = Array.from({ length: 5 }, (_, i) => writer.run(kvInsert(`pending${i}`)));
    await worker.terminate();
    const settled = await Promise.allSettled(pending);
    // each either answered before the end or failed as uncertain, never as plainly not committed
    for (const s of settled) if (s.status === "rejected") expect(s.reason).toBeInstanceOf(CommitUncertainError);
    expect(warnings.join("\n")).toMatch(/back on the main thread/);
    const after = await writer.run(kvInsert("after"));
    // committed here, not flushed by the thread: the store flushes it itself
    expect(after).toEqual({ flushed: false });
    expect(db.prepare("SELECT count(*) AS n FROM kv WHERE key = 'after'").get()).toEqual({ n: 1 });
    await writer.close();
    db.close();
  });

  it("a thread that never opened its connection committed nothing: its requests are run on the main connection", async () => {
    const { db } = await writerOn();
    const { log, warnings } = warningLog();
    // the thread's database is not there: it stops as it starts
    const writer = new IntakeWriter(path.join(dir, "missing", "faxgate.db"), log, mainConnection(db));
    const outs = await Promise.all([writer.run(kvInsert("a")), writer.run(kvInsert("b"))]);
    expect(outs).toEqual([{ flushed: false }, { flushed: false }]);
    expect(db.prepare("SELECT count(*) AS n FROM kv WHERE key IN ('a', 'b')").get()).toEqual({ n: 2 });
    expect(warnings.join("\n")).toMatch(/back on the main thread/);
    await writer.close();
    db.close();
  });
});

describe("the bytes a request carries", () => {
  const blobInsert = (key: string, bytes: Uint8Array): WriteRequest => ({
    statements: [["INSERT INTO kv (key, value) VALUES (?, ?)", [key, bytes]]],
  });

  it("reach the database exactly as given, through buffers that come back from the thread for the next requests", async () => {
    const { db, writer } = await writerOn();
    const stored = (key: string) =>
      (db.prepare("SELECT value FROM kv WHERE key = ?").get(key) as { value: Buffer }).value;
    // round 1 leaves 128 KiB buffers behind; round 2's shorter bytes go into them, and must not
    // come out with round 1's tail
    const rounds = [100_000, 70_000, 100_000];
    let kept = 0;
    for (const [round, size] of rounds.entries()) {
      const given = Array.from({ length: 10 }, (_, i) => Buffer.alloc(size + i, (round * 16 + i) & 0xff));
      const copies = given.map((b) => Buffer.from(b));
      await Promise.all(given.map((b, i) => writer.run(blobInsert(`r${round}-${i}`, b))));
      for (const [i, b] of given.entries()) {
        expect(b.equals(copies[i]!), "the caller's own buffer is left as it was").toBe(true);
        expect(stored(`r${round}-${i}`).equals(copies[i]!)).toBe(true);
      }
      if (round === 0) kept = writer.spare.bytes;
      // the same buffers went out and came back: none new were needed
      else expect(writer.spare.bytes).toBe(kept);
    }
    expect(kept).toBe(10 * 128 * 1024);
    await writer.close();
    db.close();
  });

  it("keep a job's original without its document's base64 alike on the thread and on the main connection, and the original's buffer comes back", async () => {
    const { db, writer } = await writerOn();
    const pdf = Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(30_000, 0x41)]);
    const b64 = (pdf.toString("base64").match(/.{1,76}/g) ?? []).join("\r\n");
    const raw = Buffer.from(`From: a@b\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n`);
    const made = (id: string) =>
      newJobRequest(bytesJob(0, 1), {
        id,
        now: new Date().toISOString(),
        dialect: "sqlite",
        dedupeSince: new Date(0).toISOString(),
        documents: [{ path: `/d/${id}/01-a.pdf`, name: "a.pdf", contentType: "application/pdf", bytes: pdf.length }],
        original: { path: `/d/${id}/00-original.eml`, name: "m.eml", contentType: "message/rfc822", bytes: raw.length },
        blobs: [
          { file: "00-original.eml", data: raw },
          { file: "01-a.pdf", data: pdf },
        ],
      });
    const onThread = made("FGTHREAD00000001");
    const here = made("FGMAINCONN000001");
    expect(onThread.request.splice).toBeDefined();
    const spareBefore = writer.spare.bytes;
    const [a, b] = [await writer.run(onThread.request), mainConnection(db)(here.request)];
    expect(a.spliced?.parts).toHaveLength(1);
    expect(a.spliced).toEqual(b.spliced);
    expect(a.spliced!.saved).toBeGreaterThan(b64.length - 100);
    // the original's buffer (64 KiB) went to the thread and came back with the document's (32 KiB)
    expect(writer.spare.bytes - spareBefore).toBe(64 * 1024 + 32 * 1024);
    const rows = (id: string) =>
      db.prepare("SELECT file, length(data) AS n FROM document_data WHERE job_id = ? ORDER BY file").all(id);
    expect(rows("FGTHREAD00000001")).toEqual(rows("FGMAINCONN000001"));
    expect(rows("FGTHREAD00000001")).toEqual([
      { file: "00-original.eml.spliced", n: raw.length - a.spliced!.saved },
      { file: "01-a.pdf", n: pdf.length },
    ]);
    const original = (id: string) =>
      JSON.parse((db.prepare("SELECT original FROM jobs WHERE id = ?").get(id) as { original: string }).original);
    expect(original("FGTHREAD00000001").spliced).toEqual(a.spliced!.parts);
    expect(original("FGMAINCONN000001").spliced).toEqual(a.spliced!.parts);
    // the caller's request is left as it was (a retry runs it again)
    expect(onThread.request.statements[2]![1][2]).toBe(raw);
    await writer.close();
    db.close();
  });

  it("keeps no more spare buffers than its bound, and hands out one big enough for any size", () => {
    const spare = new SpareBuffers(1024 * 1024);
    for (const n of [1, 4096, 4097, 100_000, 3_000_000]) expect(spare.take(n).byteLength).toBeGreaterThanOrEqual(n);
    for (let i = 0; i < 20; i += 1) spare.give(new ArrayBuffer(128 * 1024));
    expect(spare.bytes).toBe(1024 * 1024);
    spare.give(new ArrayBuffer(5000)); // not a size it hands out: not kept
    expect(spare.bytes).toBe(1024 * 1024);
    expect(spare.take(100_000).byteLength).toBe(128 * 1024);
    expect(spare.bytes).toBe(1024 * 1024 - 128 * 1024);
  });
});

describe("enqueue through the intake thread", () => {
  it("stores jobs arriving at once, finds a duplicate inside the write lock, and each job is readable by another connection when enqueue answers", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-iw-"));
    const store = SqliteStore.open({ dataDir: dir, threadsNow: true });
    const other = new Database(path.join(dir, "faxgate.db"), { readonly: true });
    const seen = (id: string): boolean => other.prepare("SELECT 1 FROM jobs WHERE id = ?").get(id) !== undefined;
    const results = await Promise.all([
      ...Array.from({ length: 40 }, (_, i) =>
        store.enqueue(job(i)).then((r) => ({ ...r, seenAtOnce: seen(r.job.id) })),
      ),
      // the same key twice in the same moment: one job
      ...[0, 1].map(() =>
        store.enqueue(job(99, { dedupeKey: "same-mail" })).then((r) => ({ ...r, seenAtOnce: seen(r.job.id) })),
      ),
    ]);
    expect(results.every((r) => r.seenAtOnce)).toBe(true);
    const keyed = results.slice(40);
    expect(keyed.map((r) => r.duplicate).sort()).toEqual([false, true]);
    expect(keyed[0]!.job.id).toBe(keyed[1]!.job.id);
    expect(new Set(results.map((r) => r.job.id)).size).toBe(41);
    // the documents went with the rows, byte for byte
    const stored = await store.getJob(results[7]!.job.id);
    expect((await store.readDocument(stored!.documents[0]!)).length).toBe(20_007);
    other.close();
    await store.close();
  });

  it("a command that enqueues one job exits by itself once the job is stored (the thread does not hold the process)", () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-iw-"));
    const script = `
      import { SqliteStore } from ${JSON.stringify(path.resolve("src/store/sqlite/store.ts"))};
      const store = SqliteStore.open({ dataDir: ${JSON.stringify(dir)} });
      const { job } = await store.enqueue({ source: 'cli', user: 'alice', recipients: [{ number: '+15551234567' }], documents: [{ path: '/nowhere/a.pdf', name: 'a.pdf', contentType: 'application/pdf', data: Buffer.alloc(1000, 0x25) }], cover: { enabled: false } });
      console.log(job.id);
    `;
    // no close(): the process must end on its own, with the job committed
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.error, "the process ended by itself").toBeUndefined();
    expect(run.status, run.stderr).toBe(0);
    const id = run.stdout.trim();
    const db = new Database(path.join(dir, "faxgate.db"), { readonly: true });
    expect(db.prepare("SELECT state FROM jobs WHERE id = ?").get(id)).toEqual({ state: "queued" });
    db.close();
  });
});
