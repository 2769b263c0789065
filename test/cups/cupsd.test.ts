// A private cupsd (own config, a socket in a temp folder) with the faxgate backend and PPD:
// `lp` lands the document and ticket in the printing user's folder and the watcher queues it.
// Needs cupsd, lpadmin and lp (CI installs cups cups-client cups-bsd) and root (cupsd runs the
// backend as root, mode 0700, and must own its folders); skipped with a message otherwise.
// The permission model of docs/print.md: the spool is faxgate's alone (0750, no lp group), the
// backend runs as root and hands each file over owned like the user's folder, and lp can read
// nothing in the spool.
// The queue is installed as docs/print.md says, with faxgate's CUPS policy, and alice prints as
// a real local account made for the test (cupsd checks it over its socket; test/cups/print-auth
// holds the refusals).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, lstatSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { UserConfig } from "../../src/config/schema.js";
import type { Job } from "../../src/store/types.js";
import { spoolHarness, textPdf, type SpoolHarness } from "../spool/harness.js";
import { waitUntil } from "../helpers/wait.js";
import {
  cupsSkipReason,
  type LocalAccount,
  PPD,
  startPrivateCupsd,
  throwawayAccount,
  type PrivateCupsd,
} from "./private-cupsd.js";

const skipReason = cupsSkipReason();
if (skipReason)
  console.warn(
    `[test/cups/cupsd] SKIPPED: ${skipReason}; install cups cups-client cups-bsd and run as root to test the real print path`,
  );

describe.skipIf(skipReason !== "")(
  `a private cupsd with the faxgate queue${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let t: string;
    let cups: PrivateCupsd;
    let h: SpoolHarness;
    let account: LocalAccount;
    let alice: UserConfig;
    const run = (cmd: string, args: string[]) => cups.run(cmd, args);
    /** lp as alice's local account; its output, or a throw as run() does */
    const lp = (args: string[]) => {
      const r = cups.lpAs(account, args);
      if (r.status !== 0) throw new Error(`lp ${args.join(" ")}: ${r.out}`);
      return r.out;
    };

    beforeAll(async () => {
      cups = await startPrivateCupsd({ policy: true });
      t = cups.dir;
      account = throwawayAccount("cupsd");
      alice = {
        name: "alice",
        email: "alice@example.com",
        aliases: [],
        apiKey: "k",
        spool: account.name,
      } as UserConfig;
      h = await spoolHarness({ users: [alice] });
      // As faxgate makes them: the root 0750, the user's folder 0770, no group of lp's anywhere.
      chmodSync(h.root, 0o750);
      chmodSync(path.dirname(h.root), 0o755);
      run("lpadmin", ["-p", "fax", "-E", "-v", `faxgate:${h.root}`, "-P", PPD, "-o", "printer-op-policy=faxgate"]);
    }, 30_000);

    afterAll(async () => {
      await h?.close();
      await cups?.stop();
      account?.remove();
    });

    it('lp -o fax-number=... -t "Invoice 42" lands in the user\'s folder and is queued', async () => {
      const doc = path.join(t, "invoice.pdf");
      writeFileSync(doc, await textPdf([["Invoice 42", "Total: 100.00"]]));
      const out = lp([
        "-d",
        "fax",
        "-o",
        "fax-number=+15551234567,+15557654321",
        "-o",
        'fax-to-name="Acme Billing"',
        "-t",
        "Invoice 42",
        doc,
      ]);
      expect(out).toMatch(/request id is fax-\d+/);
      const job = await waitUntil(async () => (await h.jobs())[0], "the printed job in the store", 20_000).catch(
        (e) => {
          console.log(readFileSync(path.join(t, "log/error_log"), "utf8").split("\n").slice(-25).join("\n"));
          throw e;
        },
      );
      expect(job.user).toBe("alice");
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567", "+15557654321"]);
      expect(job.cover.subject).toBe("Invoice 42");
      expect(job.meta.origin).toMatchObject({ via: "ticket" });
      expect((await h.store.readDocument(job.documents[0]!)).subarray(0, 5).toString("latin1")).toBe("%PDF-");
      await waitUntil(
        () => readdirSync(path.join(h.folder(alice), "done")).some((n) => n.endsWith(".json")),
        "ticket in done/",
        5000,
      );
    }, 30_000);

    // The print dialog's fax number: CUPS (2.4.3+) turns an IPP FaxOut destination into the job
    // options phone and faxPrefix; lp -o sets the same options on any CUPS.
    const printed = async (args: string[], match: (j: Job) => boolean) => {
      const doc = path.join(t, "phone.pdf");
      writeFileSync(doc, await textPdf([["Phone option"]]));
      lp(["-d", "fax", ...args, doc]);
      return waitUntil(async () => (await h.jobs()).find(match), `the job of lp ${args.join(" ")}`, 20_000).catch(
        (e) => {
          console.log(readFileSync(path.join(t, "log/error_log"), "utf8").split("\n").slice(-25).join("\n"));
          throw e;
        },
      );
    };

    it("lp -o phone=+15551234567 is faxed to that number", async () => {
      const job = await printed(
        ["-o", "phone=+15551234567", "-t", "phone one"],
        (j) => j.cover.subject === "phone one",
      );
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
      expect(job.meta.origin).toMatchObject({ via: "ticket" });
    }, 30_000);

    it("lp -o phone=9,15551234567 -o faxPrefix=9: the outside-line prefix is stripped, with a note", async () => {
      const job = await printed(
        ["-o", "phone=9,15551234567", "-o", "faxPrefix=9", "-t", "phone prefix"],
        (j) => j.cover.subject === "phone prefix",
      );
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567"]);
      expect(job.meta.origin?.dial).toMatch(/prefix 9 was stripped/);
    }, 30_000);

    it("lp -o phone= with several numbers faxes each of them; pauses are dropped with a note", async () => {
      const job = await printed(
        ["-o", "phone=+15551234567,+1555765w4321", "-t", "phone several"],
        (j) => j.cover.subject === "phone several",
      );
      expect(job.recipients.map((r) => r.number)).toEqual(["+15551234567", "+15557654321"]);
      expect(job.meta.origin?.dial).toMatch(/pauses \(p, w\)/);
    }, 30_000);

    it("lp -o phone=9,15551234567 without faxPrefix is refused, saying how to name the prefix", async () => {
      const doc = path.join(t, "noprefix.pdf");
      writeFileSync(doc, await textPdf([["No prefix"]]));
      const before = (await h.jobs()).length;
      lp(["-d", "fax", "-o", "phone=9,15551234567", "-t", "noprefix", doc]);
      const reason = await waitUntil(
        () =>
          readdirSync(path.join(h.folder(alice), "failed")).find(
            (n) => n.includes("noprefix") && n.endsWith(".reason.txt"),
          ),
        "the refusal",
        20_000,
      );
      expect(readFileSync(path.join(h.folder(alice), "failed", reason), "utf8")).toMatch(/-o faxPrefix=9/);
      expect(await h.jobs()).toHaveLength(before);
    }, 30_000);

    it('a document printed under its own name (lp\'s default title "letter.pdf") has the subject "letter", and no letter.pdf.pdf', async () => {
      const doc = path.join(t, "letter.pdf");
      writeFileSync(doc, await textPdf([["Dear Sir", "Regards"]]));
      lp(["-d", "fax", "-o", "fax-number=+15551230808", doc]);
      const job = await waitUntil(
        async () => (await h.jobs()).find((j) => j.recipients[0]?.number === "+15551230808"),
        "the printed letter in the store",
        20_000,
      );
      expect(job.cover.subject).toBe("letter");
      expect(job.documents.map((d) => d.name)).toEqual([expect.stringMatching(/^cups-\d+ letter\.pdf$/)]);
    }, 30_000);

    it("an office document printed with lp (docs/print.md) reaches the gateway as itself and is faxed as PDF", async () => {
      // CUPS has no filter for .docx: the PPD passes it through, and the gateway's LibreOffice converts it
      const doc = path.join(t, "report.docx");
      copyFileSync(path.join(import.meta.dirname, "../fixtures/office/hello.docx"), doc);
      lp(["-d", "fax", "-o", "fax-number=+15551230909", doc]);
      const job = await waitUntil(
        async () => (await h.jobs()).find((j) => j.recipients[0]?.number === "+15551230909"),
        "the printed report in the store",
        80_000,
      );
      expect(job.cover.subject).toBe("report");
      expect(job.documents.map((d) => [d.name, d.contentType])).toEqual([
        [expect.stringMatching(/^cups-\d+ report\.pdf$/), "application/pdf"],
      ]);
    }, 90_000);

    it("the backend writes as the owner of the user's folder (faxgate), never as root", async () => {
      const daemonIds = spawnSync("id", ["-u", "daemon"], { encoding: "utf8" }).stdout.trim();
      const uid = Number(daemonIds);
      // faxgate's own user in a real install; here "daemon" plays it (the watcher runs as root)
      chownSync(h.root, uid, uid);
      chownSync(h.folder(alice), uid, uid);
      try {
        const doc = path.join(t, "owned.pdf");
        writeFileSync(doc, await textPdf([["Owned"]]));
        const before = (await h.jobs()).length;
        lp(["-d", "fax", "-o", "fax-number=+15556667777", "-t", "owned", doc]);
        await waitUntil(async () => (await h.jobs()).length > before, "the job", 20_000);
        const done = await waitUntil(
          () =>
            readdirSync(path.join(h.folder(alice), "done")).find(
              (n) => n.startsWith("cups-") && n.includes("owned") && n.endsWith(".pdf"),
            ),
          "done/",
          5000,
        );
        expect(lstatSync(path.join(h.folder(alice), "done", done)).uid).toBe(uid);
      } finally {
        chownSync(h.root, 0, 0);
        chownSync(h.folder(alice), 0, 0);
      }
    }, 30_000);

    it("lp cannot read the spool at all (the print system never sees the queue or faxed files)", () => {
      const asLp = spawnSync("setpriv", ["--reuid=lp", "--regid=lp", "--clear-groups", "ls", h.folder(alice)], {
        encoding: "utf8",
      });
      expect(asLp.status).not.toBe(0);
      expect(asLp.stderr).toMatch(/Permission denied/);
    });

    it("option values with spaces, quoted inside the option, survive whole", async () => {
      const doc = path.join(t, "spaces.pdf");
      writeFileSync(doc, await textPdf([["Spaces"]]));
      const before = (await h.jobs()).length;
      // as typed in a shell: lp -o 'fax-to-name="Acme Billing"' -o 'fax-notes="Please call back"'
      lp([
        "-d",
        "fax",
        "-o",
        "fax-number=+15552223333",
        "-o",
        'fax-to-name="Acme Billing"',
        "-o",
        'fax-notes="Please call back"',
        "-o",
        `fax-subject="Bob's \\"quote\\""`,
        doc,
      ]);
      const job = await waitUntil(
        async () =>
          (await h.jobs()).length > before
            ? (await h.jobs()).find((j) => j.recipients[0]!.number === "+15552223333")
            : undefined,
        "the job",
        20_000,
      );
      expect(job.recipients[0]!.name).toBe("Acme Billing");
      expect(job.cover).toMatchObject({
        recipientName: "Acme Billing",
        notes: "Please call back",
        subject: `Bob's "quote"`,
      });
    }, 30_000);

    it('a value split by lp (-o fax-notes="Please call back" in a shell) cancels the job saying how to quote, never faxes "Please"', async () => {
      const doc = path.join(t, "split.pdf");
      writeFileSync(doc, await textPdf([["Split"]]));
      const before = (await h.jobs()).length;
      // the shell removed the quotes: lp gets fax-to-name=Acme Billing and splits it
      const out = lp(["-d", "fax", "-o", "fax-number=+15552224444", "-o", "fax-to-name=Acme Billing", doc]);
      const id = /request id is (fax-\d+)/.exec(out)![1]!;
      await waitUntil(() => run("lpstat", ["-W", "completed", "-o", "fax"]).includes(id), "the job to end", 20_000);
      expect(readFileSync(path.join(t, "log/error_log"), "utf8")).toMatch(/words without a name \(Billing\)/);
      expect(await h.jobs()).toHaveLength(before);
      expect(readdirSync(h.folder(alice)).filter((n) => n.startsWith("cups-"))).toEqual([]);
    }, 30_000);

    it("a printed text file is addressed by its @@FAX@@ code (read from the text itself)", async () => {
      const doc = path.join(t, "letter.txt");
      writeFileSync(doc, "Dear Sir,\n@@FAX 1 555 444 5555@@\nRegards\n");
      lp(["-d", "fax", doc]);
      const job = await waitUntil(
        async () => (await h.jobs()).find((j) => j.recipients[0]!.number === "+15554445555"),
        "the text job",
        20_000,
      ).catch((e) => {
        console.log(readFileSync(path.join(t, "log/error_log"), "utf8").split("\n").slice(-25).join("\n"));
        throw e;
      });
      expect(job.meta.origin).toMatchObject({ via: "codes" });
    }, 30_000);

    it("a user without a folder has that job aborted, and the queue keeps printing", async () => {
      const doc = path.join(t, "x.pdf");
      writeFileSync(doc, await textPdf([["nobody"]]));
      // root is authenticated (its own socket) and has no fax folder
      const out = run("lp", ["-d", "fax", "-o", "fax-number=+15551234567", doc]);
      const id = /request id is (fax-\d+)/.exec(out)![1]!;
      await waitUntil(() => run("lpstat", ["-W", "completed", "-o", "fax"]).includes(id), "the job to end", 20_000);
      expect(run("lpstat", ["-p", "fax"])).not.toMatch(/disabled/);
      expect(readFileSync(path.join(t, "log/error_log"), "utf8")).toMatch(/user \\?"root\\?" has no fax folder/);
      const before = (await h.jobs()).length;
      lp(["-d", "fax", "-o", "fax-number=+15551234567", "-t", "after", doc]);
      await waitUntil(async () => (await h.jobs()).length === before + 1, "the next job", 20_000);
    }, 45_000);
  },
);
