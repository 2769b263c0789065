// Print now, address later, from end to end: `lp` with no number anywhere -> a held job "needs an
// address" -> a mail with a link -> the owner gives the number in real Chromium (preview, form)
// -> faxed at the emulator over HTTPS. Then a second one is left to expire (the gateway's clock is
// moved on 25 hours) and its owner is told. A private cupsd, a whole gateway, playwright-core
// with Debian's chromium. FAXGATE_SCREENSHOTS=1 writes docs/images/console-address*.png.
// Needs cupsd, lpadmin, lp, root and /usr/bin/chromium; skipped with a message otherwise.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textPdf } from "../spool/harness.js";
import { waitUntil } from "../helpers/wait.js";
import { outboxMails, signIn } from "../web/rig.js";
import { cupsSkipReason } from "./private-cupsd.js";
import { PASSWORDS, startPrintRig, type PrintRig } from "./print-rig.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const skipReason = cupsSkipReason() || (existsSync(CHROMIUM) ? "" : `no chromium at ${CHROMIUM}`);
if (skipReason)
  console.warn(
    `[test/cups/print-address] SKIPPED: ${skipReason}; install cups cups-client cups-bsd chromium and run as root`,
  );
const SHOTS =
  process.env.FAXGATE_SCREENSHOTS === "1"
    ? path.resolve(__dirname, "../../docs/images")
    : path.join(os.tmpdir(), "faxgate-console-shots");

describe.skipIf(skipReason !== "")(
  `a print job with no number waits for an address${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let rig: PrintRig;
    let browser: Browser;
    // the gateway's clock: real time, moved on by the expiry test
    let offset = 0;
    const clock = { now: () => Date.now() + offset };

    const mails = () => outboxMails(rig.outbox);
    const print = async (title: string) => {
      const doc = path.join(rig.dir, `${title.replace(/\W+/g, "-")}.pdf`);
      writeFileSync(doc, await textPdf([["Dear colleague,", "please find the signed agreement attached.", "Regards"]]));
      const r = rig.cups.lpAs(rig.alice, ["-d", "fax", "-t", title, doc]);
      return rig.jobOf(/request id is (fax-\d+)/.exec(r.out)?.[1] ?? `(lp failed: ${r.out})`);
    };
    const shot = async (page: Page, name: string) => {
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SHOTS, `console-${name}.png`) });
    };

    beforeAll(async () => {
      rig = await startPrintRig({ clock });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    }, 90_000);
    afterAll(async () => {
      await browser?.close();
      await rig?.stop();
    });

    it('waits as "needs an address", mails its owner a link, is addressed in Chromium and faxed', async () => {
      const job = await print("Signed agreement");
      expect(job.state).toBe("held");
      expect(job.recipients).toMatchObject([{ number: "", state: "held", lastError: "needs an address" }]);
      // nothing is sent while it waits, and an operator's release cannot send it to no number
      await expect(rig.gw.store.operate(job.id, "release")).rejects.toThrow(/no held recipients/);

      const mail = await waitUntil(
        () => mails().find((m) => m.includes("needs a fax number")),
        'the "needs an address" mail',
        20_000,
      );
      expect(mail).toMatch(/^To: alice@example\.com/m);
      // behind the link door (web/mailed-link.ts)
      expect(mail).toMatch(new RegExp(`${rig.base}/m\\?k=address&id=${job.id}&t=\\d+`));

      const ctx = await browser.newContext({ viewport: { width: 1200, height: 800 } });
      const page = await ctx.newPage();
      await page.goto(`${rig.base}/login.html`);
      await page.getByLabel("User name").fill("alice");
      await page.getByLabel("Password").fill(PASSWORDS.alice);
      await page.getByRole("button", { name: "Sign in" }).click();
      // first in the list: the print waiting for its number
      const waiting = page.locator("#waiting");
      await waiting.getByRole("link", { name: "Give the number" }).waitFor({ timeout: 15_000 });
      await waiting.getByText("Signed agreement").waitFor();
      expect(await page.locator("main section").first().getAttribute("id")).toBe("waiting");
      await shot(page, "waiting");

      await waiting.getByRole("link", { name: "Give the number" }).click();
      await page.waitForURL(/\/address\.html\?id=/);
      await page.locator('#preview canvas[data-page="1"]').waitFor({ timeout: 20_000 });
      // a number the destination policy refuses: refused with the reason, the job still waits
      await page.getByLabel("To: fax numbers or contact names, comma-separated").fill("+19005551234");
      await page.getByRole("button", { name: "Send the fax" }).click();
      await page
        .locator("#status.error")
        .getByText(/destination not allowed/)
        .waitFor();
      expect((await rig.gw.store.getJob(job.id))!.state).toBe("held");

      await page.getByLabel("To: fax numbers or contact names, comma-separated").fill("+1 555 765 4321");
      await page.getByLabel("Add a cover page").check();
      await page.getByLabel("Notes (on the cover page)").fill("Signed copy as agreed");
      await shot(page, "address");
      await page.getByRole("button", { name: "Send the fax" }).click();
      await page.waitForURL(/\/fax\.html\?id=/);
      const done = await waitUntil(
        async () => {
          const j = await rig.gw.store.getJob(job.id);
          return j?.state === "delivered" ? j : undefined;
        },
        "the addressed fax delivered at the emulator",
        60_000,
      );
      expect(done.recipients).toMatchObject([{ number: "+15557654321", state: "delivered" }]);
      expect(done.recipients[0]!.messageId).toBeTruthy();
      expect(done.cover).toMatchObject({ enabled: true, subject: "Signed agreement", notes: "Signed copy as agreed" });
      await ctx.close();
    }, 150_000);

    it("operators see prints waiting for an address, and cannot address another user's", async () => {
      const job = await print("Operator can see");
      const ops = await signIn(rig.base, "ops", PASSWORDS.ops);
      const headers = { cookie: ops.cookie, "x-csrf-token": ops.csrf, "content-type": "application/json" };
      const list = (await (await fetch(`${rig.base}/api/waiting?all=1`, { headers })).json()) as Array<{
        id: string;
        user: string;
      }>;
      expect(list).toContainEqual(expect.objectContaining({ id: job.id, user: "alice" }));
      const r = await fetch(`${rig.base}/api/jobs/${job.id}/address`, {
        method: "POST",
        headers,
        body: JSON.stringify({ to: ["+15551234567"] }),
      });
      expect(r.status).toBe(403);
      expect((await rig.gw.store.getJob(job.id))!.state).toBe("held");
    }, 60_000);

    it("expires after spool.addressWait (24h by default) and its owner is told", async () => {
      const before = (await rig.jobs()).filter((j) => j.state === "held").map((j) => j.id);
      expect(before.length).toBeGreaterThan(0);
      // not yet: an hour short
      offset = 23 * 3_600_000;
      expect(await rig.gw.addressExpiry!.runOnce()).toBe(0);
      offset = 25 * 3_600_000;
      expect(await rig.gw.addressExpiry!.runOnce()).toBe(before.length);
      for (const id of before) {
        const j = (await rig.gw.store.getJob(id))!;
        expect(j.state).toBe("cancelled");
        expect(j.recipients[0]!.lastError).toMatch(/no fax number was given within 24 hours/);
      }
      const notice = await waitUntil(
        () => mails().find((m) => m.includes("was given no fax number in time")),
        "the expiry notice",
        30_000,
      ).catch((e) => {
        console.log(
          mails()
            .map((m) => /^Subject: .*$/m.exec(m)?.[0])
            .join("\n"),
          rig.logs
            .filter((l) => l.includes("notify"))
            .slice(-10)
            .join("\n"),
        );
        throw e;
      });
      expect(notice).toMatch(/^To: alice@example\.com/m);
      expect(notice).toMatch(/waited for a fax number and none was given/);
    }, 60_000);
  },
);
