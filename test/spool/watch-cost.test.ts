// What one printed file costs the watcher does not grow with what else is in the folder. chokidar
// read the whole folder again and lstat'ed every entry on each change, so a burst of n files
// cost n x n lstat calls (86,000 for 500 files); the folder's own watch names the file that
// changed, and only that file is looked at.
import fs from "node:fs";
import { writeFile } from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spoolHarness, type SpoolHarness } from "./harness.js";
import { waitUntil } from "../helpers/wait.js";

// counts every fs.promises.lstat of this process (the watcher's, the processor's and the store's)
let lstats = 0;
const realLstat = fs.promises.lstat;
beforeAll(() => {
  fs.promises.lstat = ((...a: Parameters<typeof realLstat>) => {
    lstats += 1;
    return realLstat(...a);
  }) as typeof realLstat;
  syncBuiltinESMExports();
});
afterAll(() => {
  fs.promises.lstat = realLstat;
  syncBuiltinESMExports();
});

let h: SpoolHarness;
const WAITING = 400;

beforeAll(async () => {
  h = await spoolHarness({
    // hidden names (a writer's temp files) are never taken: they only fill the folder
    before: async ({ folder }) => {
      for (let i = 0; i < WAITING; i += 1) await writeFile(path.join(folder(), `.upload-${i}`), "x");
    },
  });
});
afterAll(async () => {
  await h?.close();
});

describe("the cost of one printed file", () => {
  it("does not grow with the number of entries in the folder", async () => {
    const before = lstats;
    await writeFile(path.join(h.folder(), "15551234567 - note.txt"), "Please fax this note.\n");
    await waitUntil(async () => (await h!.jobs()).length > 0, "the file queued", 20_000, 20);
    await h.watcher.idle();
    const used = lstats - before;
    // a few per file (stability checks, the claim, the store, the move to done/); a re-read of the
    // folder would be at least one per waiting entry
    expect(used, `${used} lstat calls for one file next to ${WAITING} others`).toBeLessThan(WAITING / 4);
  });
});
