// The console's evidence button in a real browser (chromium via playwright-core) against a whole
// gateway built by the composition root and the emulator over HTTPS: the owner downloads the signed
// bundle of a delivered fax and it verifies; an operator gets it too, as an operator in the
// ledger; another user cannot reach it (404), and the call needs the CSRF token.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyBundle } from "../../src/evidence/bundle.js";
import { readingLedger } from "../../src/parts/ledger.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { TEST_PDF } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { consoleGateway, PASSWORDS, signIn } from "../web/rig.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);

let rig: TestGateway;
let browser: Browser;

async function signedIn(user: "alice" | "bob" | "ops"): Promise<Page> {
  const ctx = await browser.newContext({ acceptDownloads: true });
  const page = await ctx.newPage();
  await page.goto(`${rig.url("web")}/login.html`);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password").fill(PASSWORDS[user]);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "My faxes" }).waitFor();
  return page;
}

async function delivered(number: string) {
  const dir = path.join(rig.dir, "in");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "order.pdf");
  writeFileSync(file, TEST_PDF);
  const { job } = await rig.gw.store.enqueue({
    source: "smtp",
    user: "alice",
    recipients: [{ number }],
    documents: [{ path: file, name: "order.pdf", contentType: "application/pdf" }],
    cover: { enabled: false },
  });
  return waitUntil(
    async () => {
      const j = await rig.gw.store.getJob(job.id);
      return j?.state === "delivered" ? j : null;
    },
    "the fax delivered",
    60_000,
  );
}

describe.skipIf(!hasChromium)("the console's evidence button", () => {
  beforeAll(async () => {
    rig = await startGateway(consoleGateway({ delayMs: 200 }));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await rig?.stop();
  });

  it("the owner and an operator download a bundle that verifies; each is a ledger row", async () => {
    const job = await delivered("+15550107777");
    for (const user of ["alice", "ops"] as const) {
      const page = await signedIn(user);
      await page.goto(`${rig.url("web")}/fax.html?id=${job.id}`);
      const button = page.getByRole("button", { name: "Download evidence bundle (signed zip)" });
      await button.waitFor({ timeout: 20_000 });
      const [download] = await Promise.all([page.waitForEvent("download", { timeout: 60_000 }), button.click()]);
      expect(download.suggestedFilename()).toBe(`evidence-${job.id}.zip`);
      const zip = await readFile((await download.path())!);
      const v = await verifyBundle(zip);
      expect(v.ok, JSON.stringify(v.checks)).toBe(true);
      expect(v.checks.map((c) => c.what)).toContain("recipients/1/fax-as-rendered.pdf");
      await expect.poll(() => page.getByRole("status").textContent()).toContain("Evidence bundle saved as");
      await page.context().close();
    }
    const rows = await readingLedger(rig.config, rig.gw.store, false).rows({ object: { kind: "job", id: job.id } });
    const made = rows.filter((r) => r.action === "evidence-made");
    expect(made.map((r) => [r.actor, r.door])).toEqual([
      [{ kind: "person", id: "alice" }, "console"],
      [{ kind: "operator", id: "ops" }, "console"],
    ]);
    expect(made[0]!.client).toBe("127.0.0.1");
  }, 180_000);

  it("another user's fax is 404, and the call needs the CSRF token", async () => {
    const job = await delivered("+15550107778");
    const web = rig.url("web");
    const bob = await signIn(web, "bob", PASSWORDS.bob);
    const other = await fetch(`${web}/api/jobs/${job.id}/evidence`, {
      method: "POST",
      headers: { cookie: bob.cookie, "x-csrf-token": bob.csrf },
    });
    expect(other.status).toBe(404);
    const alice = await signIn(web, "alice", PASSWORDS.alice);
    const noToken = await fetch(`${web}/api/jobs/${job.id}/evidence`, {
      method: "POST",
      headers: { cookie: alice.cookie },
    });
    expect(noToken.status).toBe(403);
    const wrongRecipient = await fetch(`${web}/api/jobs/${job.id}/evidence?recipient=2`, {
      method: "POST",
      headers: { cookie: alice.cookie, "x-csrf-token": alice.csrf },
    });
    expect(wrongRecipient.status).toBe(400);
    expect(((await wrongRecipient.json()) as { error: string }).error).toContain("recipient 1 to 1");
    const rows = await readingLedger(rig.config, rig.gw.store, false).rows({ object: { kind: "job", id: job.id } });
    expect(rows.filter((r) => r.action === "evidence-made")).toEqual([]);
  }, 120_000);
});
