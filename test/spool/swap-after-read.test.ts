// Regression: a claimed spool file swapped for a symlink after it was judged and read (while its
// PDF text is parsed, a wide window) made the store copy the symlink's target, a file outside the
// spool folder, and fax it. The store must get the bytes that were judged, not the path again.
import { rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import type { QueueStore } from "../../src/store/queue-store.js";
import type { NewJob } from "../../src/store/types.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { waitUntil } from "../helpers/wait.js";
import { drop, textPdf } from "./harness.js";

let rig: TestGateway | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

/** The store, but the work file becomes a symlink to `secret` at the last moment before enqueue copies it. */
function swappingAt(secret: string) {
  return (real: QueueStore): QueueStore =>
    new Proxy(real, {
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
    });
}

it("stores the bytes it judged even if the work file is swapped for a symlink before the store copies it", async () => {
  let secret = "";
  rig = await startGateway({
    name: "swap",
    log: "quiet",
    prepare: (dir) => {
      secret = path.join(dir, "secret.txt");
      writeFileSync(secret, "SECRET outside the spool folder\n");
    },
    config: ({ dir }) => ({ spool: { root: path.join(dir, "spool"), stableFor: "100ms", maxFileBytes: 1_000_000 } }),
    // the swap happens at the last moment before the store copies: the race, made certain
    wrapStore: (real) => swappingAt(secret)(real),
  });
  const { store } = rig.gw;
  const original = Buffer.from(await textPdf([["swap me"]]));
  await drop(path.join(rig.config.spool!.root, "alice"), "15551234567.pdf", original);
  const job = await waitUntil(async () => (await store.listJobs({ source: "spool" }))[0], "the job");
  const stored = await store.readDocument(job.documents[0]!);
  expect(stored.toString("latin1")).not.toContain("SECRET");
  expect(stored.equals(original)).toBe(true);
});
