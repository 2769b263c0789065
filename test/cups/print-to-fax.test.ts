// A print job from end to end: a private cupsd with the faxgate queue shared over IPP, a whole
// gateway (spool, queue, dispatcher) and the emulator over HTTPS. ipptool (cups-ipp-utils) is a
// real IPP client, as a desktop's print dialog is: Get-Printer-Attributes on the shared queue,
// and a Print-Job whose `phone` job attribute ends as a delivered fax at the emulator. The queue
// has faxgate's CUPS policy: the Print-Job is authenticated with alice's local account (Basic,
// her password checked by PAM), as a desktop asks for it when the queue is added.
// Needs cupsd, lpadmin, lp, ipptool and root; skipped with a message otherwise.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textPdf } from "../spool/harness.js";
import { waitUntil } from "../helpers/wait.js";
import { cupsSkipReason, PPD, which } from "./private-cupsd.js";
import { startPrintRig, type PrintRig } from "./print-rig.js";

const skipReason = cupsSkipReason(["ipptool"]);
if (skipReason)
  console.warn(
    `[test/cups/print-to-fax] SKIPPED: ${skipReason}; install cups cups-client cups-bsd cups-ipp-utils and run as root`,
  );

function ipptool(args: string[]): { status: number; out: string } {
  const r = spawnSync(which("ipptool")!, args, { encoding: "utf8", timeout: 30_000 });
  return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

describe("the PPD", () => {
  it("marks the queue as a fax queue and stays valid for this CUPS (cupstestppd)", (ctx) => {
    expect(readFileSync(PPD, "latin1")).toMatch(/^\*cupsFax: True$/m);
    const tool = which("cupstestppd");
    if (!tool) ctx.skip(true, "cupstestppd not installed (cups-client)");
    const r = spawnSync(tool!, [PPD], { encoding: "utf8" });
    expect(`${r.stdout}${r.stderr}`).toMatch(/PASS/);
    expect(r.status).toBe(0);
  });
});

describe.skipIf(skipReason !== "")(
  `ipptool against the shared faxgate queue${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let rig: PrintRig;
    let uri: string;
    let aliceUri: string;

    beforeAll(async () => {
      rig = await startPrintRig();
      uri = `ipp://127.0.0.1:${rig.cups.port}/printers/fax`;
      aliceUri = `ipp://${rig.alice.name}:${encodeURIComponent(rig.alice.password)}@127.0.0.1:${rig.cups.port}/printers/fax`;
    }, 60_000);
    afterAll(async () => rig?.stop());

    it("Get-Printer-Attributes succeeds", () => {
      const r = ipptool(["-tv", uri, "get-printer-attributes.test"]);
      expect(r.out).toMatch(/\[PASS\]/);
      expect(r.out).toMatch(/printer-is-accepting-jobs \(boolean\) = true/);
      expect(r.status).toBe(0);
    });

    it("a Print-Job with a phone job attribute ends as a delivered fax at the emulator", async () => {
      const doc = path.join(rig.dir, "ipp-letter.pdf");
      writeFileSync(doc, await textPdf([["Sent by ipptool"]]));
      const test = path.join(rig.dir, "print-job-phone.test");
      writeFileSync(
        test,
        [
          "{",
          '  NAME "Print-Job with a fax number"',
          "  OPERATION Print-Job",
          "  GROUP operation-attributes-tag",
          "  ATTR charset attributes-charset utf-8",
          "  ATTR naturalLanguage attributes-natural-language en",
          "  ATTR uri printer-uri $uri",
          `  ATTR name requesting-user-name ${rig.alice.name}`,
          '  ATTR name job-name "IPP letter"',
          "  ATTR mimeMediaType document-format application/pdf",
          "  GROUP job-attributes-tag",
          '  ATTR name phone "+15551234567"',
          "  FILE $filename",
          "  STATUS successful-ok",
          "  EXPECT job-id OF-TYPE integer WITH-VALUE >0",
          "}",
          "",
        ].join("\n"),
      );
      const r = ipptool(["-tv", "-f", doc, aliceUri, test]);
      expect(r.out).toMatch(/\[PASS\]/);
      const cupsJob = /job-id \(integer\) = (\d+)/.exec(r.out)![1]!;
      const job = await rig.jobOf(cupsJob);
      expect(job.user).toBe("alice");
      expect(job.recipients.map((x) => x.number)).toEqual(["+15551234567"]);
      const done = await waitUntil(
        async () => {
          const j = await rig.gw.store.getJob(job.id);
          return j?.state === "delivered" ? j : undefined;
        },
        "the fax delivered at the emulator",
        60_000,
      );
      expect(done.recipients[0]!.messageId).toBeTruthy();
    }, 90_000);
  },
);
