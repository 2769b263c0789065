// Speed machinery, in a room of its own beside the bench row that justifies it: the spool's file
// calls (looks, reads, moves), made one of two ways, chosen once per user folder: on a local disk
// synchronously on the main thread, where a trip through libuv's pool costs more than the call;
// on a network file system through the pool, so the event loop never waits on a server. Anything
// not known (statfs) to be a local disk counts as remote, and a local disk that makes a call wait
// gets the pool for a while (localCalls). The row: `npm run bench -- spool` (1,000 files dropped at
// once against the bare store, bench/spool-throughput.bench.ts); docs/bench.md, "Print bursts: the
// spool's file calls on the main thread": 0.70 of the bare store with every call through the pool,
// 1.05-1.20 with them on the main thread on a local disk. Without that win, poolCalls alone would do.
import {
  close,
  closeSync,
  fstat,
  fstatSync,
  link,
  linkSync,
  lstat,
  lstatSync,
  lutimes,
  lutimesSync,
  open,
  openSync,
  read,
  readSync,
  rename,
  renameSync,
  statfs,
  unlink,
  unlinkSync,
  type Stats,
} from "node:fs";
import { promisify } from "node:util";

export interface FolderCalls {
  /** true: the calls are made on the calling thread (a local disk) */
  readonly here: boolean;
  /** What lstat says of `p`, or null when nothing is there or it cannot be looked at. */
  look(p: string): Promise<Stats | null>;
  open(p: string, flags: number): Promise<number>;
  fstat(fd: number): Promise<Stats>;
  read(fd: number, buf: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  close(fd: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  link(from: string, to: string): Promise<void>;
  unlink(p: string): Promise<void>;
  /** Sets a name's times without following a link in its place. */
  touch(p: string, at: Date): Promise<void>;
}

const pool = {
  lstat: promisify(lstat),
  open: promisify(open),
  fstat: promisify(fstat),
  read: promisify(read),
  close: promisify(close),
  rename: promisify(rename),
  link: promisify(link),
  unlink: promisify(unlink),
  lutimes: promisify(lutimes),
};

/** Every call through libuv's thread pool. */
export const poolCalls: FolderCalls = {
  here: false,
  look: (p) => pool.lstat(p).catch(() => null),
  open: (p, flags) => pool.open(p, flags),
  fstat: (fd) => pool.fstat(fd),
  read: async (fd, buf, offset, length, position) => (await pool.read(fd, buf, offset, length, position)).bytesRead,
  close: (fd) => pool.close(fd),
  rename: (from, to) => pool.rename(from, to),
  link: (from, to) => pool.link(from, to),
  unlink: (p) => pool.unlink(p),
  touch: (p, at) => pool.lutimes(p, at, at),
};

/**
 * Reads of up to this many bytes are made on the main thread too: a printed letter of a few KB,
 * just written and in the page cache. A larger file is read through the pool.
 */
const READ_HERE_BYTES = 256 * 1024;

export interface LocalCallsOptions {
  /** A call on the main thread that took longer than this (default 10 ms) sends the folder's calls to the pool. */
  slowMs?: number;
  /** For how long (default 60 s). */
  poolForMs?: number;
  /** Told of each such call, to log it. */
  onSlow?: (call: string, ms: number) => void;
  /** Milliseconds, for the timings (default performance.now). */
  now?: () => number;
}

/**
 * The calls of a folder on a local disk: on the calling thread, but reads of more than
 * READ_HERE_BYTES. A local disk can still make a call wait: a rename or a link needs the file
 * system's journal, whose commit may be writing out a lot of data on a slow disk (ext4's
 * ordered mode), and a look at a name not in the cache reads the disk. So each call is timed,
 * and one that held the thread longer than `slowMs` sends the folder's calls to the pool for
 * `poolForMs`: one such wait, then none. The functions are async so that a failure is a
 * rejected promise, as with the pool.
 */
export function localCalls(opts: LocalCallsOptions = {}): FolderCalls {
  const slowMs = opts.slowMs ?? 10;
  const poolForMs = opts.poolForMs ?? 60_000;
  const now = opts.now ?? (() => performance.now());
  let poolUntil = -Infinity;
  const onPool = () => now() < poolUntil;
  const timed = <T>(call: string, fn: () => T): T => {
    const started = now();
    try {
      return fn();
    } finally {
      const ms = now() - started;
      if (ms > slowMs) {
        poolUntil = now() + poolForMs;
        opts.onSlow?.(call, ms);
      }
    }
  };
  /** The pool's call while the folder is sent there, else `here`, timed as `call`. */
  const either =
    <A extends unknown[], T>(call: string, viaPool: (...a: A) => Promise<T>, here: (...a: A) => T) =>
    async (...a: A): Promise<T> =>
      onPool() ? viaPool(...a) : timed(call, () => here(...a));
  const readHere = either(
    "read",
    poolCalls.read,
    (fd: number, buf: Uint8Array, offset: number, length: number, position: number) =>
      readSync(fd, buf, offset, length, position),
  );
  return {
    get here() {
      return !onPool();
    },
    look: either("lstat", poolCalls.look, (p) => {
      try {
        return lstatSync(p, { throwIfNoEntry: false }) ?? null;
      } catch {
        return null;
      }
    }),
    open: either("open", poolCalls.open, (p, flags) => openSync(p, flags)),
    fstat: either("fstat", poolCalls.fstat, (fd) => fstatSync(fd)),
    read: async (fd, buf, offset, length, position) =>
      length > READ_HERE_BYTES
        ? poolCalls.read(fd, buf, offset, length, position)
        : readHere(fd, buf, offset, length, position),
    close: either("close", poolCalls.close, (fd) => closeSync(fd)),
    rename: either("rename", poolCalls.rename, (from, to) => renameSync(from, to)),
    link: either("link", poolCalls.link, (from, to) => linkSync(from, to)),
    unlink: either("unlink", poolCalls.unlink, (p) => unlinkSync(p)),
    touch: either("lutimes", poolCalls.touch, (p, at) => lutimesSync(p, at, at)),
  };
}

/** statfs(2) magic numbers of the local disk file systems Linux has (linux/magic.h). */
const LOCAL_FILE_SYSTEMS = new Set([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x2fc12fc1, // zfs
  0xf2f52010, // f2fs
  0xca451a4e, // bcachefs
  0x52654973, // reiserfs
  0x3153464a, // jfs
  0x01021994, // tmpfs
  0x858458f6, // ramfs
  0x794c7630, // overlayfs (a container's own disk)
]);

/** Whether a statfs type (`f_type`) is a local disk's file system (false for any other, or off Linux). */
export function isLocalFileSystem(type: number): boolean {
  return process.platform === "linux" && LOCAL_FILE_SYSTEMS.has(type >>> 0);
}

/** The calls for a folder: its own local calls on a local disk, through the pool anywhere else. */
export async function callsFor(dir: string, local: LocalCallsOptions = {}): Promise<FolderCalls> {
  const type = await new Promise<number | null>((resolve) => statfs(dir, (err, s) => resolve(err ? null : s.type)));
  return type !== null && isLocalFileSystem(type) ? localCalls(local) : poolCalls;
}
