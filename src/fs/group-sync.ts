// Group commit for fsync: many writers that each need "my bytes are on disk" share one fsync
// instead of queueing one each. A caller's promise settles with an fsync that *started after*
// the call, so whatever it wrote before calling is covered; while one fsync runs, the callers
// that arrive meanwhile all wait for the single next one. (Postgres's commit_delay and the
// group commit of mail servers' queue managers do the same.)
import { open, type FileHandle } from "node:fs/promises";

export class GroupSync {
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  private handle: FileHandle | null = null;

  /**
   * `file` is a file or a folder.
   * - `missingIsSynced`: the file being gone counts as synced (the SQLite WAL is removed only
   *   after a checkpoint has fsynced its pages into the database).
   * - `keepOpen`: opened once and kept (close() lets it go), instead of an open and a close around
   *   every fsync; only for a file that is never replaced under its name while in use.
   * - `dataOnly`: fdatasync, as SQLite itself syncs its WAL (the size, which it needs, is included).
   * - `after`: a check run after each fsync as part of it, shared the same way (its rejection is
   *   every waiter's).
   */
  constructor(
    private readonly file: string,
    private readonly opts: {
      missingIsSynced?: boolean;
      keepOpen?: boolean;
      dataOnly?: boolean;
      after?: () => Promise<void>;
    } = {},
  ) {}

  /** Resolves once an fsync that started after this call has finished; rejects with its error. */
  sync(): Promise<void> {
    if (!this.running) return this.start();
    if (!this.next) {
      this.next = this.running.then(
        () => this.startNext(),
        () => this.startNext(),
      );
    }
    return this.next;
  }

  private startNext(): Promise<void> {
    this.next = null;
    return this.start();
  }

  private start(): Promise<void> {
    const p: Promise<void> = this.fsync()
      .then(this.opts.after)
      .finally(() => {
        if (this.running === p) this.running = null;
      });
    this.running = p;
    return p;
  }

  /** One fsync of the file (protected: the test counts and holds them). */
  protected async fsync(): Promise<void> {
    const fh = this.handle ?? (await this.open());
    if (!fh) return;
    try {
      await (this.opts.dataOnly ? fh.datasync() : fh.sync());
    } finally {
      if (fh !== this.handle) await fh.close();
    }
  }

  /** The file opened for syncing, kept when `keepOpen`; null when it is gone and that is fine. */
  private async open(): Promise<FileHandle | null> {
    let fh: FileHandle;
    try {
      fh = await open(this.file, "r");
    } catch (err) {
      if (this.opts.missingIsSynced && (err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    if (this.opts.keepOpen) this.handle = fh;
    return fh;
  }

  /** Lets a kept file go once the syncs under way are done (a later sync opens it again). */
  async close(): Promise<void> {
    await this.next?.catch(() => undefined);
    await this.running?.catch(() => undefined);
    const fh = this.handle;
    this.handle = null;
    await fh?.close();
  }
}
