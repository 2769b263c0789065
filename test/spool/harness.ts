// A real SpoolWatcher on real temp folders and a real Store, with short timings for tests.
import { EventEmitter } from "node:events";
import { rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import { systemClock, type Clock } from "../../src/clock.js";
import type { SpoolConfig, UserConfig } from "../../src/config/schema.js";
import type { FaxApi } from "../../src/fax/types.js";
import { silentLogger } from "../../src/log/logger.js";
import { Metrics } from "../../src/metrics/metrics.js";
import { SpoolWatcher, type SpoolWatcherOptions } from "../../src/spool/watcher.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { Job } from "../../src/store/types.js";
import { ReaderPool } from "../../src/intake/reader-pool.js";
import { testOffice, testPolicy, testPressure, testSpool } from "../helpers/collaborators.js";
import { afterThisFile } from "../helpers/file-cleanup.js";
import { tempFolder } from "../tmp-dir.js";

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
  store: SqliteStore;
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
  spool?: Partial<SpoolConfig>;
  users?: UserConfig[];
  clientFor?: (user: string) => FaxApi;
  clock?: Clock;
  start?: boolean;
  /** Runs before the first start (files already in the folder, leftovers in .work). */
  before?: (h: { root: string; folder: (u?: UserConfig) => string }) => Promise<void>;
  extra?: Partial<SpoolWatcherOptions>;
}

// PDF text is read on a worker thread, as in the daemon. One pool for all the tests of a file:
// starting a worker (and loading pdfjs in it) took seconds per test on a loaded machine, and
// made the first job of every test wait for it. (Outside a vitest run, as in the child process
// test/spool/unreadable starts as another user, nothing runs the clean-up: the pool ends with
// that process.)
let sharedReaders: ReaderPool | null = null;

const noApi = (): FaxApi => {
  throw new Error("this test has no fax service");
};

export async function spoolHarness(opts: HarnessOptions = {}): Promise<SpoolHarness> {
  const dir = tempFolder("test");
  const root = path.join(dir, "spool");
  const store = SqliteStore.open({ dataDir: path.join(dir, "data") });
  const metrics = new Metrics();
  const users = opts.users ?? [ALICE, BOB];
  const spool: SpoolConfig = { ...testSpool(root, { stableMs: 150, maxFileBytes: 1_000_000 }), ...opts.spool };
  const folder = (u: UserConfig = ALICE) => path.join(root, u.spool ?? u.name);
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
  const readers = sharedReaders;
  const events = new EventEmitter();
  const count = (event: string, n: number): Promise<void> =>
    new Promise((resolve, reject) => {
      let left = n;
      const timer = setTimeout(() => {
        events.off(event, on);
        reject(new Error(`timed out waiting for ${n} ${event} events`));
      }, 20_000);
      const on = () => {
        if (--left > 0) return;
        clearTimeout(timer);
        events.off(event, on);
        resolve();
      };
      events.on(event, on);
    });
  // a folder without office settings converts with LibreOffice from PATH, as the daemon does
  const office = testOffice();
  const make = () =>
    new SpoolWatcher({
      spool,
      users,
      defaultCountryCode: "1",
      store,
      clientFor: opts.clientFor ?? noApi,
      logger: silentLogger(),
      metrics,
      pressure: testPressure(store),
      clock: opts.clock ?? systemClock,
      destinations: testPolicy(() => users),
      office,
      rescanMs: 1000,
      sweepMs: 200,
      retryMs: 300,
      readers,
      onSweep: () => events.emit("sweep"),
      onRescan: (user) => events.emit(`rescan:${user}`),
      ...opts.extra,
    });
  if (opts.before) {
    const { mkdir } = await import("node:fs/promises");
    for (const u of users) await mkdir(path.join(folder(u), ".work"), { recursive: true });
    await opts.before({ root, folder });
  }
  const h: SpoolHarness = {
    dir,
    root,
    store,
    metrics,
    watcher: make(),
    folder,
    jobs: () => store.listJobs({ source: "spool" }),
    rescans: (n, u = ALICE) => count(`rescan:${u.name}`, n),
    sweeps: (n) => count("sweep", n),
    restart: async () => {
      await h.watcher.stop();
      h.watcher = make();
      await h.watcher.start();
    },
    close: async () => {
      await h.watcher.stop();
      await office.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (opts.start !== false) await h.watcher.start();
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
