// SQLite's temporary files stay in memory (src/store/sqlite/db-thread.ts keepTempInMemory): a
// savepoint's journal holds pages of the queue, and by default it spills to /var/tmp, outside the
// data folder. Each run is a child process whose SQLITE_TMPDIR is a folder watched here: the
// control shows a spill is seen there; the store's intake, with the same kind of commit, makes none.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, watch } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

const run = promisify(execFile);
const CHILD = path.join(import.meta.dirname, "../helpers/sqlite-temp-child.ts");
let tmp = "";
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

/** Files SQLite made in SQLITE_TMPDIR while the child ran (each is unlinked at once: counted as made). */
async function filesMade(mode: "control" | "store"): Promise<string[]> {
  tmp = mkdtempSync(path.join(os.tmpdir(), "faxgate-sqlite-tmpdir-"));
  const made: string[] = [];
  const watcher = watch(tmp, (_event, name) => made.push(String(name)));
  try {
    const { stdout } = await run(process.execPath, ["--import", "tsx", CHILD, mode], {
      env: { ...process.env, SQLITE_TMPDIR: tmp },
      timeout: 60_000,
    });
    expect(stdout.trim()).toBe("done");
    // the watcher's events for the child's last files arrive after it exits: one more turn for them
    await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    watcher.close();
  }
  return made;
}

describe("SQLite's temporary files", () => {
  it("a bare connection spills a big savepoint journal to SQLITE_TMPDIR (the watch sees it)", async () => {
    const made = await filesMade("control");
    expect(made.some((n) => n.startsWith("etilqs_"))).toBe(true);
  }, 90_000);

  it("the store's intake commits spill nothing there: a fax's pages stay in the data folder", async () => {
    expect(await filesMade("store")).toEqual([]);
  }, 90_000);
});
