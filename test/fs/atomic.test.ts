import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { replaceFile, writeFileAtomic } from "../../src/fs/atomic.js";
import { placeFile } from "../../src/store/durable-files.js";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));
const fresh = () => (dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-atomic-")));

describe("replaceFile", () => {
  it("two writers of the same file at once each use their own temp name; one whole file wins", async () => {
    fresh();
    const dest = path.join(dir, "doc.pdf");
    const a = "a".repeat(200_000);
    const b = "b".repeat(300_000);
    await Promise.all([writeFileAtomic(dest, a), writeFileAtomic(dest, b)]);
    expect([a, b]).toContain(readFileSync(dest, "utf8"));
    // the store's documents: a retried enqueue may place the same name while the first is under way
    const placed = path.join(dir, "x.pdf");
    await Promise.all([placeFile("", placed, false, Buffer.from(a)), placeFile("", placed, false, Buffer.from(b))]);
    expect([a, b]).toContain(readFileSync(placed, "utf8"));
    expect(readdirSync(dir).sort()).toEqual(["doc.pdf", "x.pdf"]);
  });

  it("a failing fill leaves neither the temp file nor a destination, and says why", async () => {
    fresh();
    const dest = path.join(dir, "out.eml");
    await expect(
      replaceFile(dest, async (tmp) => {
        await writeFile(tmp, "half");
        throw new Error("disk gone");
      }),
    ).rejects.toThrow("disk gone");
    expect(readdirSync(dir)).toEqual([]);
  });

  it("errors of its own steps go through wrapError, and the size is returned", async () => {
    fresh();
    expect(await replaceFile(path.join(dir, "f"), (tmp) => writeFile(tmp, "hello"))).toBe(5);
    await expect(
      replaceFile(path.join(dir, "missing", "f"), async () => undefined, { wrapError: () => new Error("wrapped") }),
    ).rejects.toThrow("wrapped");
  });

  /** A file written in `from` and moved into a job folder: its size, content, and no temp name left. */
  async function moveIntoJob(from: string): Promise<void> {
    const src = path.join(from, "part-000");
    writeFileSync(src, "decoded attachment");
    mkdirSync(path.join(dir, "job"));
    const dest = path.join(dir, "job", "02-doc.pdf");
    expect(await placeFile(src, dest, true)).toBe(18);
    expect(readFileSync(dest, "utf8")).toBe("decoded attachment");
    expect(readdirSync(path.join(dir, "job"))).toEqual(["02-doc.pdf"]);
  }

  it("a whole file is moved in by one rename: its size returned, nothing left at the source, no temp name", async () => {
    fresh();
    await moveIntoJob(dir);
    expect(readdirSync(dir).sort()).toEqual(["job"]);
  });

  // The tests' temp folder is a tmpfs where there is one (test/tmp-dir.ts): the checkout's
  // .vitest-tmp/ (git-ignored), /var/tmp or /dev/shm is then another file system
  const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../.vitest-tmp");
  mkdirSync(checkout, { recursive: true });
  const otherFs =
    [checkout, "/var/tmp", "/dev/shm"].find((d) => existsSync(d) && statSync(d).dev !== statSync(os.tmpdir()).dev) ??
    null;
  it.skipIf(!otherFs)(
    "a file on another file system is copied in and then removed at its source (skipped: no second file system here)",
    async () => {
      fresh();
      const away = mkdtempSync(path.join(otherFs!, "faxgate-atomic-"));
      try {
        await moveIntoJob(away);
        expect(readdirSync(away)).toEqual([]);
      } finally {
        rmSync(away, { recursive: true, force: true });
      }
    },
  );

  it("a move that fails leaves the file where it was", async () => {
    fresh();
    const src = path.join(dir, "spool.pdf");
    writeFileSync(src, "the only copy");
    // the destination is a folder that is not empty: the rename into it fails
    const dest = path.join(dir, "taken");
    mkdirSync(path.join(dest, "inside"), { recursive: true });
    await expect(placeFile(src, dest, true)).rejects.toThrow();
    expect(readFileSync(src, "utf8")).toBe("the only copy");
    expect(readdirSync(dir).sort()).toEqual(["spool.pdf", "taken"]);
  });
});
