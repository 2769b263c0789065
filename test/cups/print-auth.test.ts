// Nobody prints as someone else: a private cupsd with the queue "fax" installed as docs/print.md
// says (faxgate's CUPS policy, cups/faxgate-policy.conf) and "faxopen" with Debian's stock policy,
// both shared, in front of a whole gateway; alice is a real local account made for the test.
// `lp -U alice` from another account is refused by the policy, and on the stock queue by the
// backend, which fails closed for every job CUPS did not authenticate (local or from another
// host), naming the fix; the authenticated user is the one whose key faxes. Needs cupsd, lpadmin,
// lp, useradd and root (and a non-loopback IPv4 address for the other-host cases); skipped with a
// message otherwise.
import { readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textPdf } from "../spool/harness.js";
import { waitUntil } from "../helpers/wait.js";
import { cupsSkipReason } from "./private-cupsd.js";
import { startPrintRig, type PrintRig } from "./print-rig.js";

const skipReason = cupsSkipReason(["setpriv"]);
if (skipReason)
  console.warn(
    `[test/cups/print-auth] SKIPPED: ${skipReason}; install cups cups-client cups-bsd passwd util-linux and run as root (the test makes a throwaway local account)`,
  );

describe.skipIf(skipReason !== "")(
  `a shared fax queue with faxgate's CUPS policy${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let rig: PrintRig;
    let doc: string;

    const NOBODY = { name: "nobody", group: "nogroup" };
    /** lp as a local account (root when absent) */
    const lp = (args: string[], as?: { name: string; group: string }) => rig.cups.lpAs(as, args);
    const aliceFiles = () => readdirSync(path.join(rig.spoolRoot, rig.alice.name)).filter((n) => n.includes("cups-"));
    const ended = (id: string) =>
      waitUntil(() => rig.cups.run("lpstat", ["-W", "completed", "-o"]).includes(id), `${id} to end`, 20_000);

    beforeAll(async () => {
      rig = await startPrintRig();
      doc = path.join(rig.dir, "auth.pdf");
      writeFileSync(doc, await textPdf([["Who printed this?"]]));
    }, 60_000);
    afterAll(async () => rig?.stop());

    it("on the stock-policy queue, lp -U alice from another local account is cancelled by the backend, naming the fix", async () => {
      for (const as of [NOBODY, undefined]) {
        // CUPS itself takes the job: the stock policy believes the name the client sends
        const r = lp(["-U", rig.alice.name, "-d", "faxopen", "-o", "phone=+15551234567", "-t", "forged", doc], as);
        const id = /request id is (faxopen-\d+)/.exec(r.out)?.[1];
        expect(id, r.out).toBeTruthy();
        await ended(id!);
      }
      expect(rig.cups.errorLog()).toMatch(
        new RegExp(
          `job from this host \\(a local lp\\) was not authenticated, so \\\\?"${rig.alice.name}\\\\?" is only the name the client sent.*lpadmin -p faxopen -o printer-op-policy=faxgate`,
        ),
      );
      expect(aliceFiles()).toEqual([]);
      expect((await rig.jobs()).filter((j) => j.user === "alice")).toEqual([]);
      expect(rig.cups.run("lpstat", ["-p", "faxopen"])).not.toMatch(/disabled/);
    }, 60_000);

    it("on the stock-policy queue even alice's own lp is refused: CUPS did not check who printed", async () => {
      const r = lp(["-d", "faxopen", "-o", "phone=+15551234567", "-t", "own on open", doc], rig.alice);
      const id = /request id is (faxopen-\d+)/.exec(r.out)?.[1];
      expect(id, r.out).toBeTruthy();
      await ended(id!);
      expect(aliceFiles()).toEqual([]);
      expect((await rig.jobs()).filter((j) => j.user === "alice")).toEqual([]);
    }, 60_000);

    it("lp -U alice from another local account is refused by the policy; nothing is faxed for alice", async () => {
      for (const as of [NOBODY, undefined]) {
        const r = lp(["-U", rig.alice.name, "-d", "fax", "-o", "phone=+15551234567", doc], as);
        expect(r.out).toMatch(/Unauthorized|Forbidden/);
        expect(r.status).not.toBe(0);
      }
      expect(aliceFiles()).toEqual([]);
      expect((await rig.jobs()).filter((j) => j.user === "alice")).toEqual([]);
    }, 60_000);

    it("alice's own lp on the policy queue faxes on alice's key", async () => {
      const r = lp(["-d", "fax", "-o", "phone=+15551112222", "-t", "from alice", doc], rig.alice);
      expect(r.out).toMatch(/request id is fax-\d+/);
      const job = await rig.jobOf(/request id is (fax-\d+)/.exec(r.out)![1]!);
      expect(job.user).toBe("alice");
      expect(job.recipients.map((x) => x.number)).toEqual(["+15551112222"]);
    }, 60_000);

    it("the authenticated local account is the one that faxes, whatever name it claims elsewhere", async () => {
      const r = lp(["-d", "fax", "-o", "phone=+15557654321", "-t", "from nobody", doc], NOBODY);
      expect(r.out).toMatch(/request id is fax-\d+/);
      const job = await rig.jobOf(/request id is (fax-\d+)/.exec(r.out)![1]!);
      expect(job.user).toBe("nobody");
      expect(job.recipients.map((x) => x.number)).toEqual(["+15557654321"]);
    }, 60_000);

    it("an unauthenticated job from another host is refused by the backend, naming the fix", async (ctx) => {
      if (!rig.cups.outside) ctx.skip(true, "this host has no non-loopback IPv4 address to print from");
      const before = (await rig.jobs()).length;
      // the open queue of before: cupsd believes the name the client sends
      const r = lp([
        "-h",
        `${rig.cups.outside}:${rig.cups.port}`,
        "-U",
        rig.alice.name,
        "-d",
        "faxopen",
        "-o",
        "phone=+15551234567",
        doc,
      ]);
      const id = /request id is (faxopen-\d+)/.exec(r.out)?.[1];
      expect(id, r.out).toBeTruthy();
      await ended(id!);
      expect(rig.cups.errorLog()).toMatch(
        new RegExp(
          `job from ${rig.cups.outside!.replace(/\./g, "\\.")} was not authenticated.*printer-op-policy=faxgate`,
        ),
      );
      expect(await rig.jobs()).toHaveLength(before);
      expect(rig.cups.run("lpstat", ["-p", "faxopen"])).not.toMatch(/disabled/);
    }, 60_000);

    it("from another host, the policy queue asks for a password (and gets none here)", async (ctx) => {
      if (!rig.cups.outside) ctx.skip(true, "this host has no non-loopback IPv4 address to print from");
      const aliceJobs = async () => (await rig.jobs()).filter((j) => j.user === "alice").length;
      const before = await aliceJobs();
      const r = lp([
        "-h",
        `${rig.cups.outside}:${rig.cups.port}`,
        "-U",
        rig.alice.name,
        "-d",
        "fax",
        "-o",
        "phone=+15551234567",
        doc,
      ]);
      expect(r.status).not.toBe(0);
      expect(await aliceJobs()).toBe(before);
    }, 60_000);
  },
);
