// Regression: a claimed spool file swapped for a symlink after it was judged and read (while its
// PDF text is parsed, a wide window) made the store copy the symlink's target, a file outside the
// spool folder, and fax it. The store must get the bytes that were judged, not the path again.
import { rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { silentLogger } from "../../src/log/logger.js";
import { Metrics } from "../../src/metrics/metrics.js";
import { SpoolWatcher } from "../../src/spool/watcher.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import type { NewJob } from "../../src/store/types.js";
import { inProcessReaders } from "../../src/intake/reader-pool.js";
import { testOffice, testPolicy, testPressure, testSpool } from "../helpers/collaborators.js";
import { waitUntil } from "../helpers/wait.js";
import { ALICE, drop, textPdf } from "./harness.js";
import { tempFolder } from "../tmp-dir.js";

let dir = "";
let watcher: SpoolWatcher | null = null;
let store: SqliteStore | null = null;
const office = testOffice();
afterEach(async () => {
  await watcher?.stop();
  await office.close();
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("stores the bytes it judged even if the work file is swapped for a symlink before the store copies it", async () => {
  dir = tempFolder("test");
  const secret = path.join(dir, "secret.txt");
  writeFileSync(secret, "SECRET outside the spool folder\n");
  store = SqliteStore.open({ dataDir: path.join(dir, "data") });
  const real = store;
  // the swap happens at the last moment before the store copies: the race, made certain
  const swapping = new Proxy(real, {
    get(target, prop) {
      if (prop === "enqueue") {
        return async (job: NewJob) => {
          const work = job.documents[0]!.path;
          rmSync(work);
          symlinkSync(secret, work);
          return target.enqueue(job);
        };
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as QueueStore;
  const root = path.join(dir, "spool");
  watcher = new SpoolWatcher({
    spool: testSpool(root, { stableMs: 100, maxFileBytes: 1_000_000 }),
    users: [ALICE],
    defaultCountryCode: "1",
    store: swapping,
    pressure: testPressure(swapping),
    clientFor: () => {
      throw new Error("no fax service in this test");
    },
    logger: silentLogger(),
    clock: systemClock,
    metrics: new Metrics(),
    readers: inProcessReaders,
    destinations: testPolicy(() => [ALICE]),
    office,
    rescanMs: 500,
  });
  await watcher.start();
  const original = Buffer.from(await textPdf([["swap me"]]));
  await drop(path.join(root, "alice"), "15551234567.pdf", original);
  const job = await waitUntil(async () => (await real.listJobs({ source: "spool" }))[0], "the job");
  const stored = await real.readDocument(job.documents[0]!);
  expect(stored.toString("latin1")).not.toContain("SECRET");
  expect(stored.equals(original)).toBe(true);
});
