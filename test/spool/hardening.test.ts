// Issue 14 on real folders: what the user typed wins over hidden codes, only a true repeat is
// swallowed (and told), files that cannot be faxed always end with a reason, and the folders
// faxgate writes are checked at every use (a link in their place is never followed).
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rm, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { localCalls, poolCalls } from "../../src/spool/folder-calls.js";
import { drop, spoolHarness as harness, textPdf, waitFor, type HarnessOptions, type SpoolHarness } from "./harness.js";

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
      await waitFor(async () => (await h!.jobs()).length === 1, 8000, "first job");
      await drop(h.folder(), "15553330001 - referral.pdf", pdf);
      await waitFor(async () => (await h!.jobs()).length === 2, 8000, "second job");
      expect((await h.jobs()).map((j) => j.recipients[0]!.number).sort()).toEqual(["+15552220001", "+15553330001"]);
    });

    it("a true repeat is not faxed twice, lands in failed/ with a reason, and its user is told", async () => {
      h = await spoolHarness();
      const pdf = await textPdf([["Invoice 42"]]);
      await drop(h.folder(), "15552220001 - invoice.pdf", pdf);
      const first = await waitFor(async () => (await h!.jobs())[0], 8000, "first job");
      await waitFor(() => existsSync(path.join(h!.folder(), "done", "15552220001 - invoice.pdf")), 5000, "done/");
      await drop(h.folder(), "15552220001 - invoice.pdf", pdf);
      await waitFor(() => inFailed("15552220001 - invoice.pdf"), 8000, "the repeat in failed/");
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
      await waitFor(() => inFailed("15551234567 - contract.pdf"), 8000, "failed/");
      const why = reason("15551234567 - contract.pdf");
      expect(why).toContain("+1 900 555 0199");
      expect(why).toContain("+15551234567");
      expect(await h.jobs()).toEqual([]);
    });

    it("a ticket (a CUPS option) and a conflicting code: refused too", async () => {
      h = await spoolHarness();
      await drop(h.folder(), "cups-7.pdf.json", JSON.stringify({ to: ["+15551234567"] }));
      await drop(h.folder(), "cups-7.pdf", await textPdf([["@@FAX 15559990000@@ Dear Sir"]]));
      await waitFor(() => inFailed("cups-7.pdf"), 8000, "failed/");
      expect(reason("cups-7.pdf")).toMatch(/ticket .*15559990000|15559990000.*ticket/s);
      expect(await h.jobs()).toEqual([]);
    });

    it("a code that agrees with the file name is no conflict", async () => {
      h = await spoolHarness();
      await drop(h.folder(), "15551234567 - letter.pdf", await textPdf([["@@FAX +1 (555) 123-4567@@"]]));
      const job = await waitFor(async () => (await h!.jobs())[0], 8000, "a job");
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
      expect(job.meta.origin).toMatchObject({ via: "file name" });
    });
  });

  describe("files that cannot be faxed end with a reason, never loop", () => {
    it("a name with a line feed is faxed (it once looped INTERNAL and was orphaned at restart)", async () => {
      h = await spoolHarness();
      await drop(h.folder(), "15551234567 - two\nlines.pdf", "%PDF-1.4\n% lf\n%%EOF\n");
      await waitFor(async () => (await h!.jobs())[0], 8000, "a job");
      await waitFor(() => existsSync(path.join(h!.folder(), "done", "15551234567 - two\nlines.pdf")), 5000, "done/");
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
      const job = await waitFor(async () => (await h!.jobs())[0], 8000, "the recovered job");
      expect(job.meta.origin).toMatchObject({ file: "15551234567 - a\nb.pdf", claim: "0123456789abcdef" });
      await waitFor(() => readdirSync(path.join(h!.folder(), ".work")).length === 0, 5000, ".work empty");
    });

    it("a name of 250 bytes is faxed under a shortened name (it once hit ENAMETOOLONG at every claim)", async () => {
      h = await spoolHarness();
      const name = `15551234567 - ${"x".repeat(250 - 18)}.pdf`;
      expect(Buffer.byteLength(name)).toBe(250);
      await writeFile(path.join(h.folder(), name), "%PDF-1.4\n% long\n%%EOF\n");
      const job = await waitFor(async () => (await h!.jobs())[0], 8000, "a job");
      expect(job.recipients[0]!.number).toBe("+15551234567");
      const done = await waitFor(
        () => readdirSync(path.join(h!.folder(), "done")).find((n) => n.endsWith(".pdf")),
        5000,
        "done/",
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
      await waitFor(async () => (await h!.jobs())[0], 8000, "a job");
      await waitFor(
        () => existsSync(path.join(done, "15551234567.pdf")) && !lstatSync(done).isSymbolicLink(),
        5000,
        "a real done/",
      );
      await waitFor(
        () => readdirSync(h!.folder()).some((n) => n.startsWith(".done.not-a-folder-")),
        5000,
        "the link moved aside",
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
      await waitFor(() => existsSync(path.join(h!.folder(), "done", "15551234567.pdf")), 8000, "done/ made again");
      expect(lstatSync(path.join(h.folder(), "done")).mode & 0o777).toBe(0o770);
    });

    it("failed/ and .work replaced by links: refusals and claims land in real folders, nothing in the targets", async () => {
      h = await spoolHarness();
      const victim = path.join(h.dir, "victim");
      await mkdir(victim);
      for (const d of ["failed", ".work"]) await replaceWithLink(path.join(h.folder(), d), victim);
      await drop(h.folder(), "letter.pdf", "%PDF-1.4\n% nowhere\n%%EOF\n");
      await waitFor(() => inFailed("letter.pdf"), 8000, "a real failed/");
      for (const d of ["failed", ".work"]) expect(lstatSync(path.join(h.folder(), d)).isDirectory()).toBe(true);
      expect(readdirSync(victim)).toEqual([]);
    });
  });
});
