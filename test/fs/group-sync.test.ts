// GroupSync: callers share fsyncs, but each is answered only by an fsync that started after it
// asked. The fsyncs are real; the subclass only counts them and holds each until released.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GroupSync } from "../../src/fs/group-sync.js";

class HeldSync extends GroupSync {
  started = 0;
  private gates: Array<() => void> = [];
  failNext: Error | null = null;

  protected override async fsync(): Promise<void> {
    this.started += 1;
    const fail = this.failNext;
    this.failNext = null;
    await new Promise<void>((resolve) => this.gates.push(resolve));
    if (fail) throw fail;
    await super.fsync();
  }

  /** Lets the fsync in flight finish. */
  release(): void {
    this.gates.shift()?.();
  }

  async waitStarted(n: number): Promise<void> {
    while (this.started < n) await new Promise((resolve) => setImmediate(resolve));
  }
}

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function file(): string {
  dir = mkdtempSync(path.join(os.tmpdir(), "group-sync-"));
  const f = path.join(dir, "wal");
  writeFileSync(f, "x");
  return f;
}

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe("GroupSync", () => {
  it("callers that arrive while an fsync runs share the next one, and none is answered by the one already running", async () => {
    const g = new HeldSync(file());
    const first = g.sync();
    await g.waitStarted(1);
    const later = [g.sync(), g.sync(), g.sync(), g.sync(), g.sync()];
    g.release();
    await first;
    // the first fsync started before these callers wrote: they are still waiting
    expect(await settled(Promise.all(later))).toBe(false);
    await g.waitStarted(2);
    g.release();
    await Promise.all(later);
    expect(g.started).toBe(2);
    // nothing in flight: the next caller gets an fsync of its own at once
    const alone = g.sync();
    await g.waitStarted(3);
    g.release();
    await alone;
    expect(g.started).toBe(3);
  });

  it("an fsync error rejects exactly the callers it was to answer", async () => {
    const g = new HeldSync(file());
    const first = g.sync();
    await g.waitStarted(1);
    const waiting = [g.sync(), g.sync()];
    g.failNext = new Error("EIO: i/o error, fsync");
    g.release();
    await first;
    await g.waitStarted(2);
    g.release();
    for (const w of waiting) await expect(w).rejects.toThrow(/EIO/);
    const after = g.sync();
    await g.waitStarted(3);
    g.release();
    await expect(after).resolves.toBeUndefined();
  });

  it("a file kept open is synced through one handle, and let go only after the sync under way", async () => {
    const g = new HeldSync(file(), { keepOpen: true, dataOnly: true });
    const first = g.sync();
    await g.waitStarted(1);
    let closed = false;
    const closing = g.close().then(() => (closed = true));
    expect(await settled(closing)).toBe(false);
    g.release();
    await first;
    await closing;
    expect(closed).toBe(true);
    // and a sync after close() opens it again
    const again = g.sync();
    await g.waitStarted(2);
    g.release();
    await expect(again).resolves.toBeUndefined();
    await g.close();
  });

  it("a missing file is an error, unless it is the SQLite WAL (gone only after a checkpoint synced it)", async () => {
    file();
    await expect(new GroupSync(path.join(dir, "nope")).sync()).rejects.toThrow(/ENOENT/);
    await expect(new GroupSync(path.join(dir, "nope"), { missingIsSynced: true }).sync()).resolves.toBeUndefined();
  });

  it("a check run after each fsync is shared like the fsync, after it, and its failure is every waiter's", async () => {
    const order: string[] = [];
    let verdict: Error | null = null;
    const g = new (class extends HeldSync {
      protected override async fsync(): Promise<void> {
        await super.fsync();
        order.push("fsync");
      }
    })(file(), {
      after: async () => {
        order.push("check");
        if (verdict) throw verdict;
      },
    });
    const first = g.sync();
    await g.waitStarted(1);
    const later = [g.sync(), g.sync(), g.sync()];
    g.release();
    await first;
    await g.waitStarted(2);
    verdict = new Error("not writable");
    g.release();
    const answers = await Promise.allSettled(later);
    expect(answers.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    // one check after each of the two fsyncs, never before one
    expect(order).toEqual(["fsync", "check", "fsync", "check"]);
  });
});
