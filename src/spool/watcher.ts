// Print to fax: watched folders, one per user, under spool.root (contract §5). Files are taken
// when complete, claimed by rename, queued durably, then moved to done/ or failed/.
import { lstat, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import PQueue from "p-queue";
import type { Clock } from "../clock.js";
import { Periodic } from "../periodic.js";
import type { SpoolConfig, UserConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import type { DestinationCheck } from "../recipients/index.js";
import type { Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import type { QueuePressure, InputReaders, DocumentConverter } from "../intake/index.js";
import type { Ledger } from "../ledger/index.js";
import type { QueueStore } from "../store/index.js";
import { sweepFailedJobs } from "./failed-jobs.js";
import { withFolder } from "./safe-folder.js";
import { FileProcessor } from "./file-processor.js";
import { callsFor, type FolderCalls } from "../fs/index.js";
import { ensureFolders, type FolderOwner, userFolders, type UserFolders } from "./folders.js";
import { parkOrphanTickets } from "./orphan-tickets.js";
import { pruneOlderThan } from "./outcome-files.js";
import { stillChanging, UserSpool } from "./user-spool.js";
import { describeWriters, resolveWriters } from "./writers.js";

// config check and doctor show who may drop files for each user
export { spoolWriterNotes } from "./writers.js";

/** The reason a leaver's print file is refused with (the doors' wording: smtp/sender-policy.ts). */
export const LEFT_REASON = "its owner has left: the directory ended their access to this fax gateway";
/** In a leaver's folder: the CUPS backend (cups/faxgate) refuses their jobs while it is there. */
export const LEFT_MARK = ".faxgate-left";

export interface SpoolWatcherOptions {
  spool: SpoolConfig;
  /** how long done/ and failed/ originals are kept (ms; null: for ever), and whether a user's may go now; absent: kept */
  retention?: { done: number | null; failed: number | null; prunable?: (user: string) => Promise<boolean> };
  users: UserConfig[];
  /** who has left the directory, by name (directory/leavers.ts): their folders still on disk refuse what arrives */
  left?: readonly string[];
  defaultCountryCode: string;
  store: QueueStore;
  ledger: Ledger;
  clientFor: (user: string) => FaxApi;
  logger: Logger;
  clock: Clock;
  metrics: Metrics;
  /** queue.maxWaiting (intake's busy answer): a full queue leaves files to be tried again */
  pressure: QueuePressure;
  /**
   * Files handled at once (default 64: a burst of small letters shares the store's disk flushes;
   * 16 left the main thread idle a quarter of a burst, waiting for the flushes; docs/bench.md).
   * What they may hold in memory is bounded on its own, in bytes (FileProcessor's memoryBytes).
   */
  concurrency?: number;
  /** How often the folders are listed in case an event was missed (default 10 s). */
  rescanMs?: number;
  /** How often final spool jobs are checked for failures and done/ is pruned (default 30 s). */
  sweepMs?: number;
  /** Called after every sweep, and after every rescan of a user's folder (tests wait on these instead of sleeping). */
  onSweep?: () => void;
  onRescan?: (user: string) => void;
  /** Wait before a file whose addressing met a temporary failure is tried again (default 30 s). */
  retryMs?: number;
  /** Where PDF text is read: the daemon's worker threads. */
  readers: InputReaders;
  /** The destination policy, with the gateway's rules and each user's own. */
  destinations: DestinationCheck;
  /** Converts office documents to PDF; its owner closes it. */
  office: DocumentConverter;
  /**
   * How a user folder's file calls are made (default: on the main thread if statfs says the
   * folder is on a local disk, through the thread pool if not; folder-calls.ts).
   */
  folderCalls?: (dir: string) => Promise<FolderCalls>;
}

export class SpoolWatcher {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly queue: PQueue;
  private readonly processor: FileProcessor;
  private readonly spools = new Map<string, UserSpool>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private sweeper: Periodic<void> | null = null;
  /** Files that could not be claimed, by "user/name" -> claim error: their user is told once. */
  private readonly unclaimable = new Map<string, string>();
  private users: UserConfig[];
  private left: readonly string[];
  /** the watched folders that are a leaver's: every file in them is refused saying so */
  private readonly leaving = new Set<string>();
  private running = false;

  constructor(private readonly opts: SpoolWatcherOptions) {
    this.log = opts.logger;
    this.clock = opts.clock;
    this.users = opts.users;
    this.left = opts.left ?? [];
    this.queue = new PQueue({ concurrency: opts.concurrency ?? 64 });
    this.processor = new FileProcessor({
      spool: opts.spool,
      store: opts.store,
      ledger: opts.ledger,
      clientFor: opts.clientFor,
      defaultCountryCode: opts.defaultCountryCode,
      logger: opts.logger,
      clock: this.clock,
      metrics: opts.metrics,
      pressure: opts.pressure,
      readers: opts.readers,
      destinations: opts.destinations,
      office: opts.office,
    });
  }

  /** Creates folders, recovers work/, takes files already present, then watches. */
  async start(): Promise<void> {
    this.running = true;
    await this.processor.seedSeen();
    await this.resolveWriters();
    for (const u of this.users) await this.addUser(u);
    for (const u of this.leavers()) await this.addUser(u, true);
    this.sweeper = new Periodic(() => this.sweep(), {
      intervalMs: this.opts.sweepMs ?? 30_000,
      unref: true,
      onError: (err) => this.log.warn({ err: describeError(err) }, "spool sweep failed"),
      onRunEnd: this.opts.onSweep,
    });
    this.sweeper.start();
  }

  /** Stops watching and finishes the files in hand; files not yet started wait for the next start. */
  async stop(): Promise<void> {
    this.running = false;
    const swept = this.sweeper?.stop();
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    await Promise.all([...this.spools.values()].map((s) => s.stop()));
    this.spools.clear();
    this.queue.clear();
    await this.queue.onIdle();
    await swept;
  }

  /**
   * SIGHUP or a directory change: folders for new users, none for removed ones. A leaver's folder
   * still on disk stays watched, so what arrives there is refused saying "has left" rather than
   * left unfaxed with no word (issue 50).
   */
  async updateUsers(users: UserConfig[], left: readonly string[] = this.left): Promise<void> {
    this.users = users;
    this.left = left;
    if (!this.running) return;
    await this.resolveWriters();
    const leavers = this.leavers();
    const wanted = new Map([...users, ...leavers].map((u) => [u.name, userFolders(this.opts.spool.root, u)]));
    const gone = new Set(leavers.map((u) => u.name));
    for (const [name, s] of this.spools) {
      const w = wanted.get(name);
      if (!w || w.root !== s.folders.root || gone.has(name) !== this.leaving.has(name)) {
        await s.stop();
        this.spools.delete(name);
        this.leaving.delete(name);
      }
    }
    for (const u of users) if (!this.spools.has(u.name)) await this.addUser(u);
    for (const u of leavers) if (!this.spools.has(u.name)) await this.addUser(u, true);
  }

  /** The leavers who are no user now, as folder owners (their folder is named for them). */
  private leavers(): FolderOwner[] {
    const users = new Set(this.users.map((u) => u.name.toLowerCase()));
    return this.left.filter((n) => !users.has(n.toLowerCase())).map((name) => ({ name }));
  }

  /** Maps each user to the local accounts whose files are faxed for them (writers.ts). */
  private async resolveWriters(): Promise<void> {
    const list = await Promise.all(this.users.map((u) => resolveWriters(u)));
    for (const w of list)
      if (w.missing.length)
        this.log.warn({ user: w.user, writers: describeWriters(w) }, "spool folder writers: account missing");
      else this.log.info({ user: w.user, writers: describeWriters(w) }, "spool folder writers");
    this.processor.setWriters(list);
  }

  /** Resolves when no file is being processed or waiting (for tests and the bench). */
  async idle(): Promise<void> {
    await this.queue.onIdle();
  }

  private async addUser(u: FolderOwner, leaver = false): Promise<void> {
    let f = userFolders(this.opts.spool.root, u);
    // a leaver's folder is watched only if it is still there: none is made for them
    if (leaver && !(await lstat(f.root).catch(() => null))?.isDirectory()) return;
    try {
      await ensureFolders(this.opts.spool.root, f);
    } catch (err) {
      this.log.error(
        { user: u.name, folder: f.root, err: describeError(err) },
        "spool folder cannot be used; this user cannot print to fax",
      );
      return;
    }
    // the file calls on this thread if the folder is on a local disk, through the pool if not
    const root = f.root;
    const local = {
      onSlow: (call: string, ms: number) =>
        this.log.warn(
          { user: u.name, folder: root, call, ms: Math.round(ms) },
          "spool folder slow: a file call held the main thread; its calls go through the thread pool for a minute",
        ),
    };
    f = userFolders(this.opts.spool.root, u, await (this.opts.folderCalls ?? ((dir) => callsFor(dir, local)))(root));
    // The CUPS backend reads this mark to refuse a leaver's job at once, with the reason.
    const mark = path.join(f.root, LEFT_MARK);
    try {
      if (leaver) await writeFile(mark, `${LEFT_REASON}\n`, { mode: 0o644 });
      else await rm(mark, { force: true });
    } catch (err) {
      this.log.warn({ user: u.name, err: describeError(err) }, "spool folder: the has-left mark cannot be written");
    }
    if (leaver) this.leaving.add(u.name);
    else this.leaving.delete(u.name);
    await this.recover(f);
    const spool = new UserSpool({
      folders: f,
      stableMs: this.opts.spool.stableFor,
      maxBytes: this.opts.spool.maxFileBytes,
      maxWriteMs: this.opts.spool.maxWriteTime,
      rescanMs: this.opts.rescanMs ?? 10_000,
      ...(this.opts.onRescan ? { onRescan: () => this.opts.onRescan!(u.name) } : {}),
      clock: this.clock,
      logger: this.log,
      take: (name, refusal) => this.queue.add(() => this.claimAndProcess(f, name, refusal)),
    });
    this.spools.set(u.name, spool);
    await spool.start();
  }

  /** Files left in the work folder by a crash: finish them, queuing only what is not queued yet. */
  private async recover(f: UserFolders): Promise<void> {
    const { documents, tickets } = await this.processor.leftovers(f);
    if (documents.length === 0 && tickets.length === 0) return;
    const known = new Set(
      (await this.opts.store.listJobs({ source: "spool", user: f.user, limit: 100_000 }))
        .map((j) => j.dedupeKey)
        .filter((k): k is string => k !== null),
    );
    this.log.info({ user: f.user, files: documents.length }, "recovering files from the work folder");
    // A file claimed only to be refused (it never stopped changing) may still have its writer.
    const unsettled = await stillChanging(f.work, documents, this.opts.spool.stableFor);
    for (const d of documents) {
      const refusal = unsettled.has(d)
        ? "it was still being written when faxgate took it up again after a restart (its size or time kept changing); a file is faxed only once it has stopped changing"
        : undefined;
      await this.queue.add(() => this.runProcess(f, d, { known, refusal }));
    }
    // Tickets whose document already reached done/ or failed/ before the crash.
    const { tickets: orphans } = await this.processor.leftovers(f);
    for (const t of orphans) await this.processor.parkOrphanTicket(f, t);
  }

  /** `refusal`: the file is refused with that reason, unread (it never stopped changing). */
  private async claimAndProcess(f: UserFolders, name: string, refusal?: string): Promise<void> {
    if (!this.running) return;
    let workName: string | null;
    try {
      workName = await this.processor.claim(f, name);
    } catch (err) {
      // Once per file and error, not at every rescan: the user is told with a reason file.
      const key = `${f.user}/${name}`;
      const what = (err as NodeJS.ErrnoException).code ?? describeError(err);
      if (this.unclaimable.get(key) === what) return;
      this.unclaimable.set(key, what);
      if (this.unclaimable.size > 10_000) this.unclaimable.delete(this.unclaimable.keys().next().value!);
      this.log.error({ user: f.user, file: name, err: describeError(err) }, "file could not be claimed");
      await this.processor
        .refuseUnclaimable(f, name, err)
        .catch((e: unknown) =>
          this.log.warn(
            { user: f.user, file: name, err: describeError(e) },
            "could not record why a file was not claimed",
          ),
        );
      return;
    }
    this.unclaimable.delete(`${f.user}/${name}`);
    if (workName) await this.runProcess(f, workName, { refusal, freshClaim: true });
  }

  /**
   * Processes a claimed file, or refuses it unread when `refusal` says why. `known`: dedupeKeys
   * already in the store (recovery).
   */
  private async runProcess(
    f: UserFolders,
    workName: string,
    { known, refusal, freshClaim }: { known?: Set<string>; refusal?: string; freshClaim?: boolean } = {},
  ): Promise<void> {
    // a leaver's file is never faxed: nobody can answer for it now
    if (this.leaving.has(f.user)) refusal = LEFT_REASON;
    try {
      if (refusal !== undefined) return await this.processor.refuseUnread(f, workName, refusal);
      const outcome = await this.processor.process(f, workName, known, freshClaim);
      if (outcome === "retry") this.retryLater(f, workName);
    } catch (err) {
      // The store could not be written, or the disk failed: the file stays claimed and is tried again.
      this.log.error({ user: f.user, file: workName, err: describeError(err) }, "DEFERRED spool file; will retry");
      this.retryLater(f, workName, refusal);
    }
  }

  private retryLater(f: UserFolders, workName: string, refusal?: string): void {
    if (!this.running) return;
    const t = setTimeout(() => {
      this.retryTimers.delete(t);
      if (this.running) void this.queue.add(() => this.runProcess(f, workName, { refusal }));
    }, this.opts.retryMs ?? 30_000);
    t.unref();
    this.retryTimers.add(t);
  }

  private async sweep(): Promise<void> {
    const byUser = new Map([...this.spools.values()].map((s) => [s.folders.user, s.folders]));
    await sweepFailedJobs(this.opts.store, (u) => byUser.get(u) ?? null, this.log);
    for (const f of byUser.values()) {
      const onRepair = (what: string) => this.log.warn({ user: f.user, repair: what }, "spool folder repaired");
      // the retention rule's times; a user under a legal hold keeps every original
      const keep = this.opts.retention ?? { done: null, failed: null };
      const prunable = !keep.prunable || (await keep.prunable(f.user));
      if (prunable && keep.done !== null)
        await pruneOlderThan(f.done, keep.done / 86_400_000, this.clock.now(), { onRepair, calls: f.calls });
      if (prunable && keep.failed !== null)
        await pruneOlderThan(f.failed, keep.failed / 86_400_000, this.clock.now(), { onRepair, calls: f.calls });
      // failed/ and .work/ are checked too, even when no file needs them now: a link or a hole
      // left in their place is repaired at the next sweep, not only at the next file
      for (const dir of [f.failed, f.work]) await withFolder(dir, async () => undefined, { onRepair, calls: f.calls });
      await parkOrphanTickets(f, this.clock.now(), this.log);
    }
  }
}
