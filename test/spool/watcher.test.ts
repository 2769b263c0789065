// The watcher on real folders with a real Store: what is taken, how it is addressed, where it ends.
import { afterEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { constants, existsSync, lstatSync, readdirSync, readFileSync, statSync } from "node:fs";
import { link, mkdir, open, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { localCalls, poolCalls } from "../../src/fs/folder-calls.js";
import { ReaderPool } from "../../src/intake/reader-pool.js";
import { grow } from "../helpers/grow.js";
import { BOB, drop, metricValue, spoolHarness, textPdf, type SpoolHarness } from "./harness.js";
import { waitUntil } from "../helpers/wait.js";

const PDF = (tag: string) => `%PDF-1.4\n% ${tag}\n%%EOF\n`;
let h: SpoolHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const files = (dir: string) => readdirSync(dir).sort();
/** A refusal is complete once the file itself is in failed/: its reason and notice come first. */
const refusedInto = (failed: string, name: string) =>
  lstatSync(path.join(failed, name), { throwIfNoEntry: false }) !== undefined &&
  existsSync(path.join(failed, `${name}.reason.txt`));

describe("spool folders", () => {
  it("creates one folder per user (user.spool overrides the name) with safe modes", async () => {
    h = await spoolHarness();
    for (const dir of [
      h.folder(),
      h.folder(BOB),
      path.join(h.folder(), "done"),
      path.join(h.folder(), "failed"),
      path.join(h.folder(), ".work"),
    ]) {
      const st = statSync(dir);
      expect(st.isDirectory()).toBe(true);
      // exactly 0770 whatever the umask: the print service's group must be able to write
      expect(st.mode & 0o777).toBe(0o770);
    }
    expect(h.folder(BOB).endsWith("bobs-folder")).toBe(true);
  });
});

describe("addressing", () => {
  it("by file name: numbers and subject", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "15551234567,15557654321 - Invoice 42.pdf", PDF("by name"));
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect(job.user).toBe("alice");
    expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567", "+15557654321"]);
    expect(job.cover.subject).toBe("Invoice 42");
    expect((await h!.store.readDocument(job.documents[0]!)).toString("utf8")).toBe(PDF("by name"));
    await waitUntil(
      () => existsSync(path.join(h!.folder(), "done", "15551234567,15557654321 - Invoice 42.pdf")),
      "done/",
      5000,
    );
    expect(files(h.folder()).filter((n) => !["done", "failed", ".work"].includes(n))).toEqual([]);
    expect(await metricValue(h.metrics, "faxgate_jobs_enqueued_total", { source: "spool" })).toBe(1);
    // counted once the move to done/ is complete
    await waitUntil(
      async () => (await metricValue(h!.metrics, "faxgate_spool_files_total", { outcome: "queued" })) === 1,
      "queued count",
      5000,
    );
  });

  it("by ticket written before the document; the ticket goes to done/ with it", async () => {
    h = await spoolHarness();
    await drop(
      h.folder(BOB),
      "report.pdf.json",
      JSON.stringify({
        to: ["+1 555 123 4567"],
        recipientName: "Acme",
        subject: "Q3 report",
        notes: "Call me",
        tags: ["q3"],
        path: "/etc/passwd",
      }),
    );
    await drop(h.folder(BOB), "report.pdf", PDF("ticket"));
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect(job.user).toBe("bob");
    expect(job.recipients).toMatchObject([{ number: "+15551234567", name: "Acme" }]);
    expect(job.cover).toMatchObject({ enabled: true, subject: "Q3 report", notes: "Call me", recipientName: "Acme" });
    expect(job.tags).toEqual(["q3"]);
    await waitUntil(() => existsSync(path.join(h!.folder(BOB), "done", "report.pdf.json")), "ticket in done/", 5000);
    expect(existsSync(path.join(h.folder(BOB), "done", "report.pdf"))).toBe(true);
  });

  it("a ticket written just after its document (within stableFor) is still used", async () => {
    h = await spoolHarness({ spool: { stableFor: "300ms" } });
    await drop(h.folder(), "memo.pdf", PDF("late ticket"));
    // fixed wait on purpose: the ticket's lateness is what is under test
    await new Promise((r) => setTimeout(r, 100));
    await drop(h.folder(), "memo.pdf.json", JSON.stringify({ to: "5551234567", subject: "Late" }));
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect(job.meta.origin).toMatchObject({ via: "ticket" });
    expect(job.cover.subject).toBe("Late");
  });

  it("by embedded codes in a PDF: several numbers on page 1 go to all", async () => {
    h = await spoolHarness();
    const pdf = await textPdf([
      ["@@FAX 555-123-4567@@ @@FAX 555-765-4321@@", "@@SUBJECT Price list@@", "@@COVER on@@"],
      ["Page two, no codes"],
    ]);
    await drop(h.folder(), "price list.pdf", pdf);
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567", "+15557654321"]);
    expect(job.cover).toMatchObject({ enabled: true, subject: "Price list" });
    expect(job.meta.origin).toMatchObject({ file: "price list.pdf", via: "codes" });
  });

  it("by embedded codes in a plain text file", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "note.txt", "Hello\n@@FAX +15551234567@@\n@@SUBJECT Lunch@@\n");
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect(job.documents[0]!.contentType).toBe("text/plain");
    expect(job.cover.subject).toBe("Lunch");
  });

  it("refuses different numbers on different pages, with the reason in failed/", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "letters.pdf", await textPdf([["@@FAX 5551234567@@"], ["@@FAX 5557654321@@"]]));
    const reason = await waitUntil(
      () =>
        existsSync(path.join(h!.folder(), "failed", "letters.pdf.reason.txt")) &&
        readFileSync(path.join(h!.folder(), "failed", "letters.pdf.reason.txt"), "utf8"),
      "reason",
      8000,
    );
    expect(reason).toMatch(/different pages/);
    await waitUntil(() => existsSync(path.join(h!.folder(), "failed", "letters.pdf")), "failed/", 5000);
    expect(await h.jobs()).toEqual([]);
  });

  it("a PDF whose text outlasts the time limit is addressed by its name, or refused saying why", async () => {
    const slow = new ReaderPool({ threads: 1, pdfTimeoutMs: 1 });
    try {
      h = await spoolHarness({ extra: { readers: slow } });
      const pdf = await textPdf([["@@FAX 5557654321@@", "a letter"]]);
      await drop(h.folder(), "15551234567 - Named.pdf", pdf);
      const job = await waitUntil(async () => (await h!.jobs())[0], "a job addressed by its file name", 8000);
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
      expect(job.meta.origin?.via).toBe("file name");
      await drop(h.folder(), "unnamed.pdf", pdf);
      const reasonFile = path.join(h.folder(), "failed", "unnamed.pdf.reason.txt");
      await waitUntil(() => existsSync(reasonFile), "the reason in failed/", 8000);
      expect(readFileSync(reasonFile, "utf8")).toMatch(
        /no fax number was found \(the document's text could not be read for @@ codes: the PDF took longer than 1 ms to read\)/,
      );
      expect(await h.jobs()).toHaveLength(1);
    } finally {
      await h?.close();
      h = null;
      await slow.close();
    }
  });

  it("no destination: failed/ with a reason and one rejected notification", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "letter.pdf", PDF("nowhere"));
    const reasonFile = path.join(h.folder(), "failed", "letter.pdf.reason.txt");
    await waitUntil(() => existsSync(path.join(h!.folder(), "failed", "letter.pdf")), "failed/", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/no fax number was found/);
    expect(readFileSync(path.join(h.folder(), "failed", "letter.pdf"), "utf8")).toBe(PDF("nowhere"));
    const notes = await h.store.listNotifications({ kind: "rejected" });
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ user: "alice", payload: { file: "letter.pdf" } });
    expect(notes[0]!.dedupeKey).toMatch(/^rejected:spool:[0-9a-f]{64}$/);
    expect(await h.jobs()).toEqual([]);
    await waitUntil(
      async () => (await metricValue(h!.metrics, "faxgate_spool_files_total", { outcome: "refused" })) === 1,
      "refused count",
      5000,
    );
  });

  it("a second refused file of the same name gets its own name and reason in failed/", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "letter.pdf", PDF("first"));
    await waitUntil(() => existsSync(path.join(h!.folder(), "failed", "letter.pdf")), "first refused", 8000);
    await drop(h.folder(), "letter.pdf", "not a fax at all \u0000\u0001");
    await waitUntil(() => existsSync(path.join(h!.folder(), "failed", "letter (2).pdf")), "second refused", 8000);
    expect(readFileSync(path.join(h.folder(), "failed", "letter.pdf.reason.txt"), "utf8")).toMatch(/no fax number/);
    expect(readFileSync(path.join(h.folder(), "failed", "letter (2).pdf.reason.txt"), "utf8")).toMatch(/unknown type/);
    expect(await h.store.listNotifications({ kind: "rejected" })).toHaveLength(2);
  });

  it("refuses content that is not faxable whatever its name says", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "15551234567.pdf", Buffer.from("PK\x03\x04zipzipzip", "latin1"));
    const reasonFile = path.join(h.folder(), "failed", "15551234567.pdf.reason.txt");
    await waitUntil(() => existsSync(reasonFile), "reason", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/application\/zip/);
  });

  it("refuses a file over maxFileBytes", async () => {
    h = await spoolHarness({ spool: { maxFileBytes: 2048 } });
    await drop(h.folder(), "15551234567.pdf", PDF("x".repeat(3000)));
    const reasonFile = path.join(h.folder(), "failed", "15551234567.pdf.reason.txt");
    await waitUntil(() => existsSync(reasonFile), "reason", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/over the limit of 2 KB/);
  });

  it("refuses an invalid ticket rather than guessing", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "15551234567.pdf.json", '{"to": 42}');
    await drop(h.folder(), "15551234567.pdf", PDF("bad ticket"));
    const reasonFile = path.join(h.folder(), "failed", "15551234567.pdf.reason.txt");
    await waitUntil(
      () => existsSync(path.join(h!.folder(), "failed", "15551234567.pdf.json")),
      "ticket in failed/",
      8000,
    );
    expect(readFileSync(reasonFile, "utf8")).toMatch(/ticket's "to" is invalid/);
    expect(await h.jobs()).toEqual([]);
  });
});

describe("what is taken", () => {
  it("takes files already present at start, but not subfolders, dot-files or partial names", async () => {
    h = await spoolHarness({
      start: false,
      before: async ({ folder }) => {
        await writeFile(path.join(folder(), "15551234567 - early.pdf"), PDF("early"));
        await mkdir(path.join(folder(), "sub"));
        await writeFile(path.join(folder(), "sub", "15551234567.pdf"), PDF("sub"));
        await writeFile(path.join(folder(), ".15551234567.pdf"), PDF("dot"));
        await writeFile(path.join(folder(), "15551234567.pdf.part"), PDF("part"));
        await writeFile(path.join(folder(), "~$15551234567.pdf"), PDF("office"));
      },
    });
    await h.watcher.start();
    await waitUntil(async () => (await h!.jobs()).length === 1, "the early file", 8000);
    // two full rescans looked at every name again; a name wrongly taken in the first would have
    // settled (stableFor) and been queued before the second, and the queue is then idle
    await h.rescans(2);
    await h.watcher.idle();
    expect(await h.jobs()).toHaveLength(1);
    expect(files(h.folder())).toEqual([
      ".15551234567.pdf",
      ".work",
      "15551234567.pdf.part",
      "done",
      "failed",
      "sub",
      "~$15551234567.pdf",
    ]);
    expect(files(path.join(h.folder(), "sub"))).toEqual(["15551234567.pdf"]);
  });

  it("a slow writer (over ~2 s) is taken once, whole", async () => {
    h = await spoolHarness({ spool: { stableFor: "400ms" } });
    const fh = await open(path.join(h.folder(), "15551234567 - slow.pdf"), "w");
    const chunks: string[] = ["%PDF-1.4\n"];
    await fh.write(chunks[0]!);
    for (let i = 0; i < 8; i++) {
      // fixed wait on purpose: the slow writer's pace is what is under test
      await new Promise((r) => setTimeout(r, 250));
      const c = `% chunk ${i} ${"x".repeat(1000)}\n`;
      chunks.push(c);
      await fh.write(c);
    }
    await fh.write("%%EOF\n");
    chunks.push("%%EOF\n");
    await fh.close();
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    expect((await h!.store.readDocument(job.documents[0]!)).toString("utf8")).toBe(chunks.join(""));
    await h.rescans(1);
    await h.watcher.idle();
    expect(await h.jobs()).toHaveLength(1);
  });

  it("a file that passes maxFileBytes while still being written is refused then, not when it stops", async () => {
    h = await spoolHarness({ spool: { stableFor: "1s", maxFileBytes: 4096 } });
    const name = "15551234567 - runaway.pdf";
    const grown = await grow(path.join(h.folder(), name), () => `% ${"x".repeat(500)}\n`, 100, 80, true);
    // it never stayed still for stableFor, so only the size could have made it taken
    expect(grown.takenWhileGrowing).toBe(true);
    const reasonFile = path.join(h.folder(), "failed", `${name}.reason.txt`);
    await waitUntil(() => refusedInto(path.join(h!.folder(), "failed"), name), "refused into failed/", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/over the limit of 4 KB/);
    expect(await h.jobs()).toEqual([]);
    expect(await h.store.listNotifications({ kind: "rejected" })).toMatchObject([
      { user: "alice", payload: { file: name } },
    ]);
  });

  it("a file still changing after maxWriteTime is refused unread, and its user told", async () => {
    // 3 s; each write comes well within stableFor of the last
    h = await spoolHarness({ spool: { stableFor: "1s", maxWriteTime: "3s" } });
    const name = "15551234567 - endless.txt";
    const grown = await grow(path.join(h.folder(), name), (i) => `line ${i}\n`, 100, 150, true);
    expect(grown.takenWhileGrowing).toBe(true);
    expect(grown.bytes).toBeLessThan(4096);
    const reasonFile = path.join(h.folder(), "failed", `${name}.reason.txt`);
    await waitUntil(() => refusedInto(path.join(h!.folder(), "failed"), name), "refused into failed/", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/still being written after 3 s/);
    expect(await h.jobs()).toEqual([]);
    const notes = await h.store.listNotifications({ kind: "rejected" });
    expect(notes).toHaveLength(1);
    expect(notes[0]!.payload).toMatchObject({ file: name, reason: expect.stringMatching(/still being written/) });
    // the watcher goes on: the next file is taken as usual
    await drop(h.folder(), "15557654321.pdf", PDF("after the endless one"));
    await waitUntil(async () => (await h!.jobs()).length === 1, "the next file", 8000);
  });

  // with the folder's file calls on this thread (a local disk) and through the thread pool (a
  // network file system; folder-calls.ts): neither may open the FIFO and wait, or follow the link
  it.each([{ calls: localCalls() }, { calls: poolCalls }])(
    "a symlink to /etc/passwd and a FIFO are never read, and the watcher stays up (file calls here: $calls.here)",
    async ({ calls }) => {
      h = await spoolHarness({ extra: { folderCalls: async () => calls } });
      await symlink("/etc/passwd", path.join(h.folder(), "15551234567 - passwd.pdf"));
      execFileSync("mkfifo", [path.join(h.folder(), "15551234567 - pipe.pdf")]);
      const failed = path.join(h.folder(), "failed");
      await waitUntil(
        () => refusedInto(failed, "15551234567 - passwd.pdf") && refusedInto(failed, "15551234567 - pipe.pdf"),
        "both refused",
        8000,
      );
      expect(readFileSync(path.join(failed, "15551234567 - passwd.pdf.reason.txt"), "utf8")).toMatch(/symbolic link/);
      expect(readFileSync(path.join(failed, "15551234567 - pipe.pdf.reason.txt"), "utf8")).toMatch(/FIFO/);
      // Nobody holds the FIFO open for reading: a non-blocking writer finds no reader.
      await expect(
        open(path.join(failed, "15551234567 - pipe.pdf"), constants.O_WRONLY | constants.O_NONBLOCK),
      ).rejects.toMatchObject({ code: "ENXIO" });
      // The link was moved, not followed.
      expect(lstatSync(path.join(failed, "15551234567 - passwd.pdf")).isSymbolicLink()).toBe(true);
      expect(await h.jobs()).toEqual([]);
      await drop(h.folder(), "15551234567 - after.pdf", PDF("after"));
      await waitUntil(async () => (await h!.jobs()).length === 1, "the next file", 8000);
    },
  );

  it("a hard link to a file outside the folder is refused", async () => {
    h = await spoolHarness();
    const outside = path.join(h.dir, "outside.pdf");
    await writeFile(outside, PDF("outside"));
    await link(outside, path.join(h.folder(), "15551234567 - linked.pdf"));
    const reasonFile = path.join(h.folder(), "failed", "15551234567 - linked.pdf.reason.txt");
    await waitUntil(() => existsSync(reasonFile), "reason", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/hard links/);
    expect(await h.jobs()).toEqual([]);
  });

  it.each([{ calls: localCalls() }, { calls: poolCalls }])(
    "1,000 files dropped at once are all queued exactly once (file calls here: $calls.here)",
    async ({ calls }) => {
      h = await spoolHarness({
        spool: { stableFor: "100ms" },
        extra: { concurrency: 8, folderCalls: async () => calls },
      });
      const dir = h.folder();
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          writeFile(path.join(dir, `1555${String(1000000 + i).slice(1)} - doc ${i}.pdf`), PDF(`bulk ${i}`)),
        ),
      );
      // done/ first: listing a thousand jobs every 25 ms took the CPU the watcher needed
      await waitUntil(
        async () => files(path.join(dir, "done")).length === 1000 && (await h!.jobs()).length >= 1000,
        "1000 jobs",
        60_000,
      ).catch(async (err: Error) => {
        // where the files were when time ran out: slow (all moving) tells apart from stuck
        const count = (sub: string) => (existsSync(path.join(dir, sub)) ? files(path.join(dir, sub)).length : 0);
        const waiting = files(dir).filter((f) => f.endsWith(".pdf")).length;
        const where = `in the folder ${waiting}, .work ${count(".work")}, done ${count("done")}, failed ${count("failed")}`;
        throw new Error(`${err.message} (${where}; jobs ${(await h!.jobs()).length})`);
      });
      await h.watcher.idle();
      const jobs = await h.store.listJobs({ source: "spool", limit: 5000 });
      expect(jobs).toHaveLength(1000);
      expect(new Set(jobs.map((j) => j.meta.origin?.file)).size).toBe(1000);
      expect(files(path.join(dir, ".work"))).toEqual([]);
    },
    90_000,
  );
});

describe("crash safety and duplicates", () => {
  it("recovers files left in the work folder: queues what was not queued, only moves what was", async () => {
    // First run: queue one file, then put it back into .work as if the crash came before the move.
    h = await spoolHarness();
    await drop(h.folder(), "15551234567 - queued.pdf", PDF("queued before crash"));
    const first = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    await waitUntil(() => existsSync(path.join(h!.folder(), "done", "15551234567 - queued.pdf")), "done", 5000);
    await h.watcher.stop();
    const work = path.join(h.folder(), ".work");
    const { rename } = await import("node:fs/promises");
    await rename(
      path.join(h.folder(), "done", "15551234567 - queued.pdf"),
      path.join(work, `${first.meta.origin!.claim}.15551234567 - queued.pdf`),
    );
    // ...and a claimed file whose job was never written.
    await writeFile(path.join(work, "0123456789abcdef.15557654321 - claimed.pdf"), PDF("claimed, not queued"));
    await h.restart();
    await waitUntil(async () => (await h!.jobs()).length === 2 && files(work).length === 0, "recovery", 8000);
    const jobs = await h.jobs();
    expect(jobs.filter((j) => j.id === first.id)).toHaveLength(1);
    expect(jobs.find((j) => j.id !== first.id)!.recipients[0]!.number).toBe("+15557654321");
    expect(files(path.join(h.folder(), "done"))).toEqual(["15551234567 - queued.pdf", "15557654321 - claimed.pdf"]);
  });

  it("a claimed file still being written at start (claimed to be refused, then a crash) is refused unread, not faxed", async () => {
    const name = "15551234567 - endless.txt";
    let growing: ReturnType<typeof grow> | null = null;
    h = await spoolHarness({
      start: false,
      spool: { stableFor: "500ms" },
      before: async ({ folder }) => {
        growing = grow(path.join(folder(), ".work", `0123456789abcdef.${name}`), (i) => `line ${i}\n`, 100, 100, true);
      },
    });
    await h.watcher.start();
    const grown = await growing!;
    expect(grown.takenWhileGrowing).toBe(true);
    const reasonFile = path.join(h.folder(), "failed", `${name}.reason.txt`);
    await waitUntil(() => refusedInto(path.join(h!.folder(), "failed"), name), "refused into failed/", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/still being written when faxgate took it up again/);
    expect(await h.jobs()).toEqual([]);
    // the move into failed/ is a link, then an unlink: the work is over once the watcher is idle
    await h.watcher.idle();
    expect(files(path.join(h.folder(), ".work"))).toEqual([]);
  });

  it("the same file dropped twice within the window is faxed once; after the window it is faxed again", async () => {
    let offset = 0;
    h = await spoolHarness({ clock: { now: () => Date.now() + offset }, spool: { dedupeWindow: "10m" } });
    await drop(h.folder(), "15551234567 - twice.pdf", PDF("same content"));
    await waitUntil(async () => (await h!.jobs()).length === 1, "first", 8000);
    await drop(h.folder(), "15551234567 - twice.pdf", PDF("same content"));
    // swallowed, but never silently: in failed/ with a reason naming the job that has it
    await waitUntil(
      () => refusedInto(path.join(h!.folder(), "failed"), "15551234567 - twice.pdf"),
      "second in failed/",
      8000,
    );
    expect(readFileSync(path.join(h.folder(), "failed", "15551234567 - twice.pdf.reason.txt"), "utf8")).toContain(
      (await h.jobs())[0]!.id,
    );
    expect(await h.jobs()).toHaveLength(1);
    await waitUntil(
      async () => (await metricValue(h!.metrics, "faxgate_spool_files_total", { outcome: "duplicate" })) === 1,
      "duplicate count",
      5000,
    );
    // Different content under the same name is a new fax.
    await drop(h.folder(), "15551234567 - twice.pdf", PDF("other content"));
    await waitUntil(async () => (await h!.jobs()).length === 2, "other content", 8000);
    // The window also holds across a restart...
    await h.restart();
    await drop(h.folder(), "15551234567 - twice.pdf", PDF("same content"));
    await waitUntil(
      () => refusedInto(path.join(h!.folder(), "failed"), "15551234567 - twice (2).pdf"),
      "fourth in failed/",
      8000,
    );
    expect(await h.jobs()).toHaveLength(2);
    // ...and ends.
    offset = 11 * 60_000;
    await drop(h.folder(), "15551234567 - twice.pdf", PDF("same content"));
    await waitUntil(async () => (await h!.jobs()).length === 3, "after the window", 8000);
  });

  it("a job that fails later leaves its reason in failed/ and the original moves there", async () => {
    h = await spoolHarness();
    await drop(h.folder(), "15551234567 - doomed.pdf", PDF("doomed"));
    const job = await waitUntil(async () => (await h!.jobs())[0], "a job", 8000);
    await waitUntil(() => existsSync(path.join(h!.folder(), "done", "15551234567 - doomed.pdf")), "done", 5000);
    await h.store.fail(
      { jobId: job.id, idx: 0 },
      { reason: "the line was busy 3 times", fields: { errorInfo: "Busy" } },
    );
    const reasonFile = path.join(h.folder(), "failed", "15551234567 - doomed.pdf.reason.txt");
    await waitUntil(() => existsSync(reasonFile), "reason", 8000);
    expect(readFileSync(reasonFile, "utf8")).toMatch(/\+1 555-123-4567: failed \(Busy\)/);
    expect(await readFile(path.join(h.folder(), "failed", "15551234567 - doomed.pdf"), "utf8")).toBe(PDF("doomed"));
    expect(existsSync(path.join(h.folder(), "done", "15551234567 - doomed.pdf"))).toBe(false);
  });

  it("a ticket alone for over an hour goes to failed/ instead of addressing a later file", async () => {
    let offset = 0;
    h = await spoolHarness({ clock: { now: () => Date.now() + offset } });
    await drop(h.folder(), "invoice.pdf.json", JSON.stringify({ to: ["5551234567"] }));
    // two sweeps: the first may have started before the drop
    await h.sweeps(2);
    expect(existsSync(path.join(h.folder(), "invoice.pdf.json"))).toBe(true);
    offset = 61 * 60_000;
    await waitUntil(
      () => existsSync(path.join(h!.folder(), "failed", "invoice.pdf.json")),
      "orphan ticket parked",
      5000,
    );
    expect(readFileSync(path.join(h.folder(), "failed", "invoice.pdf.json.reason.txt"), "utf8")).toMatch(
      /without its document/,
    );
  });

  it("updateUsers adds folders for new users and stops watching removed ones", async () => {
    h = await spoolHarness({ users: [{ name: "alice", email: "alice@example.com", aliases: [], apiKey: "k" }] });
    const carol = { name: "carol", email: "carol@example.com", aliases: [], apiKey: "k2" };
    await h.watcher.updateUsers([carol]);
    await drop(h.folder(carol), "15551234567.pdf", PDF("carol"));
    const job = await waitUntil(async () => (await h!.jobs())[0], "carol job", 8000);
    expect(job.user).toBe("carol");
    await drop(h.folder(), "15551234567.pdf", PDF("alice gone"));
    // the watcher is alive and has looked at carol's folder twice since (a folder still watched
    // would have seen the drop at once and taken it after stableFor, well within that)
    await h.rescans(2, carol);
    await h.watcher.idle();
    expect(await h.jobs()).toHaveLength(1);
    expect(existsSync(path.join(h.folder(), "15551234567.pdf"))).toBe(true);
  });
});
