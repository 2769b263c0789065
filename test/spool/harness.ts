// The print folders as the daemon builds them (test/helpers/gateway.ts startSpoolDoor: the
// composition root's factories on the one test config), on real temp folders and a real store,
// with short intervals; what the spool suites have always used of it.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import type { Clock } from "../../src/clock.js";
import type { UserConfig } from "../../src/config/schema.js";
import type { FaxApi } from "../../src/fax/types.js";
import type { OfficeConverter } from "../../src/intake/index.js";
import { ReaderPool } from "../../src/intake/reader-pool.js";
import type { Logger } from "../../src/log/logger.js";
import type { Metrics } from "../../src/metrics/metrics.js";
import type { SpoolTuning } from "../../src/parts/spool.js";
import type { SpoolWatcher } from "../../src/spool/watcher.js";
import type { QueueStore } from "../../src/store/index.js";
import type { Job } from "../../src/store/types.js";
import type { TestEmulator } from "../helpers/emulator.js";
import { afterThisFile } from "../helpers/file-cleanup.js";
import { type Sections, startSpoolDoor } from "../helpers/gateway.js";

export const ALICE: UserConfig = { name: "alice", email: "alice@example.com", aliases: [], apiKey: "test-key-alice" };
export const BOB: UserConfig = {
  name: "bob",
  email: "bob@example.com",
  aliases: [],
  apiKey: "test-key-bob",
  spool: "bobs-folder",
};

export interface SpoolHarness {
  dir: string;
  root: string;
  store: QueueStore;
  metrics: Metrics;
  watcher: SpoolWatcher;
  folder(user?: UserConfig): string;
  jobs(): Promise<Job[]>;
  /** Resolves after `n` more complete rescans of `user`'s folder (default alice): every name in it was looked at. */
  rescans(n: number, user?: UserConfig): Promise<void>;
  /** Resolves after `n` more complete sweeps (failed jobs, done/ pruning, orphan tickets). */
  sweeps(n: number): Promise<void>;
  /** A fresh watcher on the same folders and store (a restart). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** The config's spool section over the harness's (as a config file holds it: durations as text, "300ms"). */
  spool?: Sections;
  users?: UserConfig[];
  /** The fax service the gateway talks to (default: one of its own, stopped by close()). */
  emulator?: TestEmulator;
  /** Each user's fax client instead of the gateway's (a service unreachable once). */
  clientFor?: (user: string) => FaxApi;
  clock?: Clock;
  start?: boolean;
  /** Runs before the first start (files already in the folder, leftovers in .work). */
  before?: (h: { root: string; folder: (u?: UserConfig) => string }) => Promise<void>;
  /** What the daemon's config does not set: a logger, leavers, readers or converter of the test's, the watcher's tuning. */
  extra?: Omit<SpoolTuning, "onSweep" | "onRescan"> & {
    logger?: Logger;
    left?: string[];
    readers?: ReaderPool;
    office?: OfficeConverter;
  };
}

// PDF text is read on a worker thread, as in the daemon. One pool for all the tests of a file:
// starting a worker (and loading pdfjs in it) took seconds per test on a loaded machine, and
// made the first job of every test wait for it. (Outside a vitest run, as in the child process
// test/spool/unreadable starts as another user, nothing runs the clean-up: the pool ends with
// that process.)
let sharedReaders: ReaderPool | null = null;

export async function spoolHarness(opts: HarnessOptions = {}): Promise<SpoolHarness> {
  const users = opts.users ?? [ALICE, BOB];
  const { logger, left, readers, office, ...tuning } = opts.extra ?? {};
  if (!sharedReaders) {
    const pool = new ReaderPool({ threads: 1 });
    sharedReaders = pool;
    afterThisFile(async () => {
      if (sharedReaders === pool) sharedReaders = null;
      await pool.close();
    });
    // started here, so the first test's waits for a job do not include the worker's start
    await sharedReaders.pdfPageTexts(await textPdf([["warm-up"]]));
  }
  let root = "";
  const folderIn =
    (at: string) =>
    (u: UserConfig = ALICE) =>
      path.join(at, u.spool ?? u.name);
  const door = await startSpoolDoor({
    name: "spool",
    sharedEmulator: opts.emulator,
    config: ({ dir }) => {
      root = path.join(dir, "spool");
      return {
        spool: { root, stableFor: "150ms", maxFileBytes: 1_000_000, ...opts.spool },
        users,
      };
    },
    prepare: async (dir) => {
      if (!opts.before) return;
      const at = path.join(dir, "spool");
      for (const u of users) await mkdir(path.join(folderIn(at)(u), ".work"), { recursive: true });
      await opts.before({ root: at, folder: folderIn(at) });
    },
    logger,
    clock: opts.clock,
    readerPool: readers ?? sharedReaders,
    office,
    clientFor: opts.clientFor,
    left,
    tuning: { rescanMs: 1000, sweepMs: 200, retryMs: 300, ...tuning },
    start: opts.start,
  });
  const { store, metrics } = door.core;
  const h: SpoolHarness = {
    dir: door.dir,
    root,
    store,
    metrics,
    watcher: door.watcher,
    folder: folderIn(root),
    jobs: () => store.listJobs({ source: "spool" }),
    rescans: (n, u = ALICE) => door.rescans(n, u.name),
    sweeps: (n) => door.sweeps(n),
    restart: async () => {
      await door.restart();
      h.watcher = door.watcher;
    },
    close: () => door.stop(),
  };
  return h;
}

/** A PDF whose pages carry the given lines of text (one array per page). */
export async function textPdf(pages: string[][]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = doc.addPage([612, 792]);
    for (const [i, line] of lines.entries()) page.drawText(line, { x: 50, y: 740 - i * 20, size: 12, font });
  }
  return doc.save();
}

/** Writes via a dot-name and renames, the way a well-behaved program drops a file. */
export async function drop(dir: string, name: string, data: string | Uint8Array): Promise<void> {
  const tmp = path.join(dir, `.${name}.tmp`);
  await writeFile(tmp, data);
  const { rename } = await import("node:fs/promises");
  await rename(tmp, path.join(dir, name));
}

export async function metricValue(m: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = metric?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v ? Number(v.value) : 0;
}
