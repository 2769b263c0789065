// The watched folder of one user: fs.watch says a name changed, and we decide when a file is
// complete ourselves (size and mtime unchanged for spool.stableFor), so a slow writer is never taken
// half-written; a rescan catches what an event missed. Not chokidar, which re-reads the whole
// folder on every change (docs/bench.md). A file over the size limit is taken at once, and one
// still changing after maxWriteMs is refused: none sits in the folder forever unanswered.
import { watch, type FSWatcher } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import type { Clock } from "../clock.js";
import { describeError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { Periodic } from "../periodic.js";
import { DONE_DIR, FAILED_DIR, type UserFolders } from "./folders.js";
import { isIgnoredName, isTicketName } from "./safe-file.js";

interface Observation {
  size: number;
  mtimeMs: number;
  ino: number;
  /** when size and mtime last changed */
  since: number;
  /** when this file (this inode under this name) was first seen */
  firstSeen: number;
  timer: NodeJS.Timeout | null;
}

export interface UserSpoolOptions {
  folders: UserFolders;
  stableMs: number;
  /** A file larger than this is taken at once, without waiting for it to settle (it is refused). */
  maxBytes: number;
  /** A file still changing after this long is handed over for refusal. */
  maxWriteMs: number;
  rescanMs: number;
  /** Called after every timed rescan: every name in the folder was looked at. */
  onRescan?: () => void;
  clock: Clock;
  logger: Logger;
  /**
   * Called once per stable name (or with `refusal` for a file that never settled); the name is
   * not offered again while the promise runs.
   */
  take: (name: string, refusal?: string) => Promise<void>;
}

export class UserSpool {
  private watcher: FSWatcher | null = null;
  /** the folder the watch is on (a folder replaced under the same name needs a new watch) */
  private watchedIno: number | null = null;
  private rescans: Periodic<void> | null = null;
  private readonly seen = new Map<string, Observation>();
  private readonly taking = new Set<string>();
  private stopped = false;

  constructor(private readonly opts: UserSpoolOptions) {}

  get folders(): UserFolders {
    return this.opts.folders;
  }

  async start(): Promise<void> {
    await this.watchFolder();
    await this.rescan();
    this.rescans = new Periodic(() => this.rescan(), {
      intervalMs: this.opts.rescanMs,
      firstDelayMs: this.opts.rescanMs,
      unref: true,
      onError: () => undefined, // rescan() logs its own trouble
      onRunEnd: this.opts.onRescan,
    });
    this.rescans.start();
  }

  /**
   * (Re)watches the folder itself, not its children: each event names the entry that changed,
   * and nudge() does the rest. An event with no name (possible on some systems) rescans.
   */
  private async watchFolder(): Promise<void> {
    const root = this.opts.folders.root;
    const st = await lstat(root).catch(() => null);
    if (this.stopped || !st?.isDirectory()) return;
    if (this.watcher && this.watchedIno === st.ino) return;
    this.unwatch();
    try {
      const watcher = watch(root, { persistent: false }, (_event, name) => {
        if (name) this.nudge(name.toString());
        else void this.rescan();
      });
      watcher.on("error", (err) => {
        this.opts.logger.warn({ folder: root, err: describeError(err) }, "watch error; the folder is rescanned");
        // the next rescan watches it again
        if (this.watcher === watcher) this.unwatch();
      });
      this.watcher = watcher;
      this.watchedIno = st.ino;
    } catch (err) {
      this.opts.logger.warn({ folder: root, err: describeError(err) }, "folder cannot be watched; it is rescanned");
    }
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = null;
    this.watchedIno = null;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const rescanned = this.rescans?.stop();
    for (const o of this.seen.values()) if (o.timer) clearTimeout(o.timer);
    this.seen.clear();
    this.unwatch();
    await rescanned;
  }

  /** Every name in the folder, for files present at start and events the watch missed. */
  async rescan(): Promise<void> {
    if (this.stopped) return;
    await this.watchFolder();
    let names: string[];
    try {
      names = await readdir(this.opts.folders.root);
    } catch (err) {
      this.opts.logger.warn({ folder: this.opts.folders.root, err: describeError(err) }, "spool folder cannot be read");
      return;
    }
    for (const n of names) if (!this.seen.has(n) && !this.taking.has(n)) this.nudge(n);
  }

  /** Something happened to `name`: (re)start its stability watch. */
  nudge(name: string): void {
    // done/ and failed/ are faxgate's own, whatever is in their place: withFolder() deals with a
    // link or a file there (moved aside), never the document pickup.
    if (this.stopped || isIgnoredName(name) || name === DONE_DIR || name === FAILED_DIR) return;
    if (isTicketName(name)) {
      // A ticket written just after its document restarts the document's quiet period.
      const doc = name.slice(0, -".json".length);
      const o = this.seen.get(doc);
      if (o) o.since = this.opts.clock.now();
      return;
    }
    if (this.taking.has(name)) return;
    void this.check(name);
  }

  private forget(name: string): void {
    const o = this.seen.get(name);
    if (o?.timer) clearTimeout(o.timer);
    this.seen.delete(name);
  }

  private async check(name: string): Promise<void> {
    if (this.stopped || this.taking.has(name)) return;
    const st = await this.opts.folders.calls.look(path.join(this.opts.folders.root, name));
    if (!st || st.isDirectory()) return this.forget(name);
    const now = this.opts.clock.now();
    const prev = this.seen.get(name);
    if (prev && unchanged(prev, st)) {
      if (now - prev.since >= this.opts.stableMs) return this.takeNow(name);
      this.schedule(name, prev, this.opts.stableMs - (now - prev.since));
      return;
    }
    // Over the limit already: waiting for it to settle would only let it grow.
    if (st.size > this.opts.maxBytes) return this.takeNow(name);
    const firstSeen = prev && prev.ino === st.ino ? prev.firstSeen : now;
    if (now - firstSeen >= this.opts.maxWriteMs) {
      return this.takeNow(
        name,
        `it was still being written after ${waitedFor(this.opts.maxWriteMs)} (its size or time kept changing); ` +
          "a file is faxed only once it has stopped changing",
      );
    }
    const o: Observation = {
      size: st.size,
      mtimeMs: st.mtimeMs,
      ino: st.ino,
      since: now,
      firstSeen,
      timer: prev?.timer ?? null,
    };
    this.seen.set(name, o);
    this.schedule(name, o, this.opts.stableMs);
  }

  private takeNow(name: string, refusal?: string): void {
    this.forget(name);
    this.taking.add(name);
    this.opts.take(name, refusal).finally(() => this.taking.delete(name));
  }

  private schedule(name: string, o: Observation, ms: number): void {
    if (o.timer) clearTimeout(o.timer);
    o.timer = setTimeout(
      () => {
        o.timer = null;
        void this.check(name);
      },
      Math.max(10, ms),
    );
  }
}

/**
 * The same rule for files found already claimed at start (a crash came between their claim and
 * their outcome): the names in `dir` whose size, time or inode change within `stableMs`. Such a
 * file was claimed to be refused while still being written, and its writer is still at it.
 */
export async function stillChanging(dir: string, names: string[], stableMs: number): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const look = () => Promise.all(names.map((n) => lstat(path.join(dir, n)).catch(() => null)));
  const before = await look();
  await new Promise((r) => setTimeout(r, stableMs));
  const after = await look();
  return new Set(
    names.filter((_, i) => {
      const a = before[i];
      const b = after[i];
      return a && b && !unchanged(a, b);
    }),
  );
}

/** Same file, same size, same modification time: nothing was written in between. */
function unchanged(
  a: { size: number; mtimeMs: number; ino: number },
  b: { size: number; mtimeMs: number; ino: number },
): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/** "30 min", "45 s": how long a writer was given, for the reason file (spool needs no more than this). */
function waitedFor(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  return s % 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s / 60} min`;
}
