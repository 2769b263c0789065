// Issue 14 on real folders: what the user typed wins over hidden codes, only a true repeat is
// swallowed (and told), files that cannot be faxed always end with a reason, and the folders
// faxgate writes are checked at every use (a link in their place is never followed).
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rm, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { localCalls, poolCalls } from "../../src/fs/folder-calls.js";
import { drop, spoolHarness as harness, textPdf, type HarnessOptions, type SpoolHarness } from "./harness.js";
import { waitUntil } from "../helpers/wait.js";

let h: SpoolHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const inFailed = (name: string) =>
  existsSync(path.join(h!.folder(), "failed", name)) &&
  existsSync(path.join(h!.folder(), "failed", `${name}.reason.txt`));
const reason = (name: string) => readFileSync(path.join(h!.folder(), "failed", `${name}.reason.txt`), "utf8");
/** Puts a link to `target` in place of the folder `dir`. The sweep (every 200 ms) makes a missing folder again, so it may win the gap between removal and link: then once more. */
async function replaceWithLink(dir: string, target: string): Promise<void> {
  for (;;) {
    await rm(dir, { recursive: true, force: true });
    try {
      return await symlink(target, dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}

// Every test twice: the folders' file calls on this thread (a local disk, what this machine has)
// and through the thread pool (what a folder on a network file system gets; folder-calls.ts).
describe.each([{ calls: localCalls() }, { calls: poolCalls }])("file calls here: $calls.here", ({ calls }) => {
  const spoolHarness = (o: HarnessOptions = {}) =>
    harness({ ...o, extra: { folderCalls: async () => calls, ...o.extra } });

  describe("dedupe swallows only a true repeat, and says so", () => {
    it("the same document to a different number is faxed again", async () => {
      h = await spoolHarness();
      const pdf = await textPdf([["Referral letter"]]);
      await drop(h.folder(), "15552220001 - referral.pdf", pdf);
      await waitUntil(async () => (await h!.jobs()).length === 1, "first job", 8000);
      await drop(h.folder(), "15553330001 - referral.pdf", pdf);
      await waitUntil(async () => (await h!.jobs()).length === 2, "second job", 8000);
      expect((await h.jobs()).map((j) => j.recipients[0]!.number).sort()).toEqual(["+15552220001", "+15553330001"]);
    });

    it("a true repeat is not faxed twice, lands in failed/ with a reason, and its user is told", async () => {
      h = await spoolHarness();
      const pdf = await textPdf([["Invoice 42"]]);
      await drop(h.folder(), "15552220001 - invoice.pdf", pdf);
      const first = await waitUntil(async () => (await h!.jobs())[0], "first job", 8000);
      await waitUntil(() => existsSync(path.join(h!.folder(), "done", "15552220001 - invoice.pdf")), "done/", 5000);
      await drop(h.folder(), "15552220001 - invoice.pdf", pdf);
      await waitUntil(() => inFailed("15552220001 - invoice.pdf"), "the repeat in failed/", 8000);
      expect(reason("15552220001 - invoice.pdf")).toContain(`not faxed again`);
      expect(reason("15552220001 - invoice.pdf")).toContain(first.id);
      expect(await h.jobs()).toHaveLength(1);
      expect((await h.store.listNotifications({ kind: "rejected" })).map((n) => n.payload)).toEqual([
        expect.objectContaining({ file: "15552220001 - invoice.pdf" }),
      ]);
    });
  });

  describe("what the user typed wins over codes hidden in the document", () => {
    it("a file name and a conflicting @@FAX@@ code: refused with both named, nothing faxed", async () => {
      h = await spoolHarness();
      await drop(h.folder(), "15551234567 - contract.pdf", await textPdf([["Contract", "@@FAX +1 900 555 0199@@"]]));
      await waitUntil(() => inFailed("15551234567 - contract.pdf"), "failed/", 8000);
      const why = reason("15551234567 - contract.pdf");
      expect(why).toContain("+1 900 555 0199");
      expect(why).toContain("+15551234567");
      expect(await h.jobs()).toEqual([]);
    });

    it("a ticket (a CUPS option) and a conflicting code: refused too", async () => {
      h = await spoolHarness();
      await drop(h.folder(), "cups-7.pdf.json", JSON.stringify({ to: ["+15551234567"] }));
      await drop(h.folder(), "cups-7.pdf", await textPdf([["@@FAX 15559990000@@ Dear Sir"]]));
      await waitUntil(() => inFailed("cups-7.pdf"), "failed/", 8000);
      expect(reason("cups-7.pdf")).toMatch(/ticket .*15559990000|15559990000.*ticket/s);
      expect(await h.jobs()).toEqual([]);
    });

    it("a code that agrees with the file name is no conflict", async () => {
      h = await spoolHarness();
      await drop(h.folder(), "15551234567 - letter.pdf", await textPdf([["@@FAX +1 (555) 123-4567@@"]]));
      const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
      expect(job.meta.origin).toMatchObject({ via: "file name" });
    });
  });

  describe("files that cannot be faxed end with a reason, never loop", () => {
    it("a name with a line feed is faxed (it once looped INTERNAL and was orphaned at restart)", async () => {
      h = await spoolHarness();
      await drop(h.folder(), "15551234567 - two\nlines.pdf", "%PDF-1.4\n% lf\n%%EOF\n");
      await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
      await waitUntil(() => existsSync(path.join(h!.folder(), "done", "15551234567 - two\nlines.pdf")), "done/", 5000);
      // the move to done/ is a link, then the unlink of the claimed name: wait for the file's work
      // to be over, not only for its first half
      await h.watcher.idle();
      expect(readdirSync(path.join(h.folder(), ".work"))).toEqual([]);
    });

    it("a claimed file with a line feed in its name is finished after a restart, not orphaned", async () => {
      h = await spoolHarness({
        before: async ({ folder }) =>
          writeFile(
            path.join(folder(), ".work", "0123456789abcdef.15551234567 - a\nb.pdf"),
            "%PDF-1.4\n% lf claimed\n%%EOF\n",
          ),
      });
      const job = await waitUntil(async () => (await h!.jobs())[0], "the recovered job", 8000);
      expect(job.meta.origin).toMatchObject({ file: "15551234567 - a\nb.pdf", claim: "0123456789abcdef" });
      await waitUntil(() => readdirSync(path.join(h!.folder(), ".work")).length === 0, ".work empty", 5000);
    });

    it("a name of 250 bytes is faxed under a shortened name (it once hit ENAMETOOLONG at every claim)", async () => {
      h = await spoolHarness();
      const name = `15551234567 - ${"x".repeat(250 - 18)}.pdf`;
      expect(Buffer.byteLength(name)).toBe(250);
      await writeFile(path.join(h.folder(), name), "%PDF-1.4\n% long\n%%EOF\n");
      const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
      expect(job.recipients[0]!.number).toBe("+15551234567");
      const done = await waitUntil(
        () => readdirSync(path.join(h!.folder(), "done")).find((n) => n.endsWith(".pdf")),
        "done/",
        5000,
      );
      expect(done.startsWith("15551234567 - xxx")).toBe(true);
      expect(Buffer.byteLength(done)).toBeLessThanOrEqual(200);
      expect(existsSync(path.join(h.folder(), name))).toBe(false);
    });
  });

  describe("the folders faxgate writes are checked at every use", () => {
    it("done/ replaced by a link: the prune never touches the link's target; a real done/ is made again", async () => {
      h = await spoolHarness();
      const victim = path.join(h.dir, "victim");
      await mkdir(victim);
      await writeFile(path.join(victim, "keys.json"), "precious");
      const old = new Date(Date.now() - 30 * 86_400_000);
      await utimes(path.join(victim, "keys.json"), old, old);
      const done = path.join(h.folder(), "done");
      await replaceWithLink(done, victim);
      await drop(h.folder(), "15551234567.pdf", "%PDF-1.4\n% after the swap\n%%EOF\n");
      await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
      await waitUntil(
        () => existsSync(path.join(done, "15551234567.pdf")) && !lstatSync(done).isSymbolicLink(),
        "a real done/",
        5000,
      );
      await waitUntil(
        () => readdirSync(h!.folder()).some((n) => n.startsWith(".done.not-a-folder-")),
        "the link moved aside",
        5000,
      );
      // three more sweeps (each prunes done/) have run since, none of them in the link's target
      await h.sweeps(3);
      expect(readFileSync(path.join(victim, "keys.json"), "utf8")).toBe("precious");
      expect(readdirSync(victim)).toEqual(["keys.json"]);
    });

    it("done/ deleted by its user: the next file still goes through (it once looped DEFERRED)", async () => {
      h = await spoolHarness();
      await rm(path.join(h.folder(), "done"), { recursive: true });
      await drop(h.folder(), "15551234567.pdf", "%PDF-1.4\n% done gone\n%%EOF\n");
      await waitUntil(() => existsSync(path.join(h!.folder(), "done", "15551234567.pdf")), "done/ made again", 8000);
      expect(lstatSync(path.join(h.folder(), "done")).mode & 0o777).toBe(0o770);
    });

    it("failed/ and .work replaced by links: refusals and claims land in real folders, nothing in the targets", async () => {
      h = await spoolHarness();
      const victim = path.join(h.dir, "victim");
      await mkdir(victim);
      for (const d of ["failed", ".work"]) await replaceWithLink(path.join(h.folder(), d), victim);
      await drop(h.folder(), "letter.pdf", "%PDF-1.4\n% nowhere\n%%EOF\n");
      await waitUntil(() => inFailed("letter.pdf"), "a real failed/", 8000);
      for (const d of ["failed", ".work"]) expect(lstatSync(path.join(h.folder(), d)).isDirectory()).toBe(true);
      expect(readdirSync(victim)).toEqual([]);
    });
  });
});
