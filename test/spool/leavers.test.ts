// A leaver's print folder (issue 50): what arrives there is refused saying "has left", never
// left unfaxed with no word. The real watcher on real folders, and the CUPS backend as cupsd runs it.
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { LEFT_MARK } from "../../src/spool/watcher.js";
import { BACKEND } from "../cups/private-cupsd.js";
import { waitUntil } from "../helpers/wait.js";
import { ALICE, drop, spoolHarness, type SpoolHarness } from "./harness.js";

const PDF = "%PDF-1.4\n% to fax 555-123-4567\n%%EOF\n";
let h: SpoolHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const CAROL = { ...ALICE, name: "carol", email: "carol@example.com", apiKey: "test-key-carol" };

/** A harness with alice a user and carol a leaver whose folder is still on disk. */
const withLeaver = () =>
  spoolHarness({
    users: [ALICE],
    extra: { left: ["carol"] },
    before: async ({ root }) => {
      await mkdir(path.join(root, "carol"), { recursive: true });
    },
  });

function cups(root: string, user: string, file: string) {
  const r = spawnSync("/bin/sh", [BACKEND, "7", user, "letter", "1", "fax-number=5551234567", file], {
    env: { PATH: "/usr/bin:/bin", DEVICE_URI: `faxgate:${root}`, AUTH_INFO_REQUIRED: "none", AUTH_USERNAME: user },
    encoding: "utf8",
  });
  return { code: r.status, stderr: r.stderr };
}

describe("a leaver's print folder", () => {
  it("refuses a file put there into failed/ with a has-left reason, and queues nothing", async () => {
    h = await withLeaver();
    const folder = path.join(h.root, "carol");
    await drop(folder, "letter.pdf", PDF);
    const failed = path.join(folder, "failed");
    await waitUntil(() => existsSync(path.join(failed, "letter.pdf")), "failed/", 8000);
    expect(readFileSync(path.join(failed, "letter.pdf.reason.txt"), "utf8")).toMatch(/has left/);
    expect(readFileSync(path.join(failed, "letter.pdf"), "utf8")).toBe(PDF);
    expect(await h.jobs()).toEqual([]);
    // the reason file names why, never the document's numbers
    expect(readFileSync(path.join(failed, "letter.pdf.reason.txt"), "utf8")).not.toContain("555");
  });

  it("makes no folder for a leaver who had none, and drops the mark when they are listed again", async () => {
    h = await spoolHarness({ users: [ALICE], extra: { left: ["dave"] } });
    expect(existsSync(path.join(h.root, "dave"))).toBe(false);
    await mkdir(path.join(h.root, "carol"), { recursive: true });
    await h.watcher.updateUsers([ALICE], ["carol"]);
    expect(existsSync(path.join(h.root, "carol", LEFT_MARK))).toBe(true);
    await h.watcher.updateUsers([ALICE, CAROL], []);
    expect(existsSync(path.join(h.root, "carol", LEFT_MARK))).toBe(false);
  });

  it("the CUPS backend refuses a leaver's job with the reason and writes nothing", async () => {
    h = await withLeaver();
    const file = path.join(h.dir, "job.pdf");
    await writeFile(file, PDF);
    const r = cups(h.root, "carol", file);
    expect(r.code).toBe(5); // CUPS_BACKEND_CANCEL: the job ends, it is not retried
    expect(r.stderr).toMatch(/ERROR: faxgate: "carol" has left/);
    expect(readdirSync(path.join(h.root, "carol")).filter((n) => !n.startsWith("."))).toEqual(["done", "failed"]);
    // a user's job goes through as before
    expect(cups(h.root, "alice", file).code).toBe(0);
  });
});
