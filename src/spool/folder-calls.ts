// The spool's file calls (looks, reads, moves), made one of two ways, chosen once per user folder.
// On a local disk each takes microseconds on the main thread, where a trip through libuv's thread
// pool costs the main thread far more under load: a print burst makes about a dozen a file, and
// made here a burst of 1,000 letters queued about 1,550 a second against about 1,100 (docs/bench.md).
// On a network file system (NFS, SMB, FUSE, ...) a call can wait for a server, so there every
// call goes through the pool and the event loop never waits on one. Which kind a folder is on
// is asked of the kernel (statfs); anything not known to be a local disk is treated as remote.
import {
  close, closeSync, fstat, fstatSync, link, linkSync, lstat, lstatSync, lutimes, lutimesSync, open, openSync,
  read, readSync, rename, renameSync, statfs, unlink, unlinkSync, type Stats,
} from 'node:fs';
import { promisify } from 'node:util';

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

/**
 * Every call on the calling thread, but reads of more than READ_HERE_BYTES. The functions are
 * async so that a failure is a rejected promise, as with the pool.
 */
export const hereCalls: FolderCalls = {
  here: true,
  look: async (p) => {
    try {
      return lstatSync(p, { throwIfNoEntry: false }) ?? null;
    } catch {
      return null;
    }
  },
  open: async (p, flags) => openSync(p, flags),
  fstat: async (fd) => fstatSync(fd),
  read: async (fd, buf, offset, length, position) =>
    length <= READ_HERE_BYTES ? readSync(fd, buf, offset, length, position) : poolCalls.read(fd, buf, offset, length, position),
  close: async (fd) => closeSync(fd),
  rename: async (from, to) => renameSync(from, to),
  link: async (from, to) => linkSync(from, to),
  unlink: async (p) => unlinkSync(p),
  touch: async (p, at) => lutimesSync(p, at, at),
};

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
  return process.platform === 'linux' && LOCAL_FILE_SYSTEMS.has(type >>> 0);
}

/** The calls for a folder: here on a local disk, through the pool anywhere else. */
export async function callsFor(dir: string): Promise<FolderCalls> {
  const type = await new Promise<number | null>((resolve) => statfs(dir, (err, s) => resolve(err ? null : s.type)));
  return type !== null && isLocalFileSystem(type) ? hereCalls : poolCalls;
}
