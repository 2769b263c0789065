// Nobody prints as someone else: a private cupsd with faxgate's CUPS policy (cups/faxgate-policy.conf)
// on the queue "faxauth", and the open queue "fax" of before, both shared, in front of a whole
// gateway. `lp -U alice` from another account is refused by the policy; an unauthenticated job
// from another host is refused by the backend, naming the fix; the authenticated user is the one
// whose key faxes. Needs cupsd, lpadmin, lp and root (and a non-loopback IPv4 address for the
// other-host cases); skipped with a message otherwise.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textPdf } from "../spool/harness.js";
import { waitUntil } from "../helpers/wait.js";
import { cupsSkipReason, which } from "./private-cupsd.js";
import { startPrintRig, type PrintRig } from "./print-rig.js";

const skipReason = cupsSkipReason(["setpriv"]);
if (skipReason)
  console.warn(`[test/cups/print-auth] SKIPPED: ${skipReason}; install cups cups-client cups-bsd and run as root`);

describe.skipIf(skipReason !== "")(
  `a shared fax queue with faxgate's CUPS policy${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let rig: PrintRig;
    let doc: string;

    /** lp as the local account `as` (root when absent); never waits for a password prompt. */
    const lp = (args: string[], as?: string) => {
      const argv = as
        ? [
            "setpriv",
            `--reuid=${as}`,
            `--regid=${as === "nobody" ? "nogroup" : as}`,
            "--clear-groups",
            which("lp")!,
            ...args,
          ]
        : [which("lp")!, ...args];
      const r = spawnSync(argv[0]!, argv.slice(1), {
        env: rig.cups.env,
        encoding: "utf8",
        timeout: 20_000,
        stdio: ["ignore", "pipe", "pipe"],
      });
      return { status: r.status, out: `${r.stdout}${r.stderr}` };
    };
    const ended = (id: string) =>
      waitUntil(() => rig.cups.run("lpstat", ["-W", "completed", "-o"]).includes(id), `${id} to end`, 20_000);

    beforeAll(async () => {
      rig = await startPrintRig({ policy: true });
      doc = path.join(rig.dir, "auth.pdf");
      writeFileSync(doc, await textPdf([["Who printed this?"]]));
    }, 60_000);
    afterAll(async () => rig?.stop());

    it("lp -U alice from another local account is refused by the policy; nothing is faxed for alice", async () => {
      for (const as of ["nobody", undefined]) {
        const r = lp(["-U", "alice", "-d", "faxauth", "-o", "phone=+15551234567", doc], as);
        expect(r.out).toMatch(/Unauthorized|Forbidden/);
        expect(r.status).not.toBe(0);
      }
      expect((await rig.jobs()).filter((j) => j.user === "alice")).toEqual([]);
    }, 60_000);

    it("the authenticated local account is the one that faxes, whatever name it claims elsewhere", async () => {
      const r = lp(["-d", "faxauth", "-o", "phone=+15557654321", "-t", "from nobody", doc], "nobody");
      expect(r.out).toMatch(/request id is faxauth-\d+/);
      const job = await rig.jobOf(/request id is (faxauth-\d+)/.exec(r.out)![1]!);
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
        "alice",
        "-d",
        "fax",
        "-o",
        "phone=+15551234567",
        doc,
      ]);
      const id = /request id is (fax-\d+)/.exec(r.out)?.[1];
      expect(id, r.out).toBeTruthy();
      await ended(id!);
      expect(rig.cups.errorLog()).toMatch(
        new RegExp(
          `job from ${rig.cups.outside!.replace(/\./g, "\\.")} was not authenticated.*printer-op-policy=faxgate`,
        ),
      );
      expect(await rig.jobs()).toHaveLength(before);
      expect(rig.cups.run("lpstat", ["-p", "fax"])).not.toMatch(/disabled/);
    }, 60_000);

    it("from another host, the policy queue asks for a password (and gets none here)", async (ctx) => {
      if (!rig.cups.outside) ctx.skip(true, "this host has no non-loopback IPv4 address to print from");
      const r = lp([
        "-h",
        `${rig.cups.outside}:${rig.cups.port}`,
        "-U",
        "alice",
        "-d",
        "faxauth",
        "-o",
        "phone=+15551234567",
        doc,
      ]);
      expect(r.status).not.toBe(0);
      expect((await rig.jobs()).filter((j) => j.user === "alice")).toEqual([]);
    }, 60_000);
  },
);
