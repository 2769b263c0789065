// The store's flushes, each shared by every caller waiting at the time (GroupSync): the WAL (a new
// job's commit), the documents folder (a new job's folder), and the data folder (stillWritable's
// second look). The WAL file is kept open: SQLite removes it only when the last connection
// closes (ours stays open until close()), and a checkpoint that restarts it rewrites the same file.
import { constants as fsConstants, promises as fsp } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import { GroupSync } from "../../fs/index.js";

export interface DiskSyncs {
  /** The WAL's fdatasync, then access(W_OK) on the data folder. */
  wal: GroupSync;
  documents: GroupSync;
  /**
   * ext4 stopped by an error (errors=remount-ro) marks itself "emergency_ro" without setting the
   * mount read-only, which access() does not see; an fsync of the data folder answers EROFS.
   */
  dataDir: GroupSync;
  /** The error of a data folder that stopped being writable after a commit. */
  notWritable(err: unknown): FaxgateError;
}

export function diskSyncs(dataDir: string, documentsDir: string): DiskSyncs {
  const notWritable = (err: unknown): FaxgateError =>
    new FaxgateError(
      "STORE_UNAVAILABLE",
      `the data folder ${dataDir} is not writable any more (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): what was just stored may not be on disk`,
      { cause: err, temporary: true },
    );
  return {
    wal: new GroupSync(path.join(dataDir, "faxgate.db-wal"), {
      missingIsSynced: true,
      keepOpen: true,
      dataOnly: true,
      after: () =>
        fsp.access(dataDir, fsConstants.W_OK).catch((err: unknown) => {
          throw notWritable(err);
        }),
    }),
    documents: new GroupSync(documentsDir, { keepOpen: true }),
    dataDir: new GroupSync(dataDir, { keepOpen: true }),
    notWritable,
  };
}
