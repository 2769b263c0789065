// The console in a real browser (Debian's chromium driven by playwright-core) against a whole
// gateway and the emulator over HTTPS: sign-in, the list changing live as a fax is delivered,
// the pdf.js preview, resend, cancel, an upload, and one user failing to reach another's fax; and
// its words: who cancelled, local times, progress against Tries, the operator page for a clerk.
// FAXGATE_SCREENSHOTS=1 also writes the screenshots of docs/console.md into docs/images/.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emulatorInbound } from "../helpers/emulator.js";
import { TEST_PDF } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { PASSWORDS, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(
    `console browser tests skipped: no chromium at ${CHROMIUM} (apt-get install chromium, or set FAXGATE_CHROMIUM)`,
  );
const SHOTS =
  process.env.FAXGATE_SCREENSHOTS === "1"
    ? path.resolve(__dirname, "../../docs/images")
    : path.join(os.tmpdir(), "faxgate-console-shots");

let rig: TestGateway;
let browser: Browser;

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `console-${name}.png`), fullPage: false });
}

async function signedIn(
  user: "alice" | "bob" | "ops",
  viewport = { width: 1100, height: 760 },
): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport, ignoreHTTPSErrors: false });
  const page = await ctx.newPage();
  await page.goto(`${rig.url("web")}/`);
  // not signed in: the list sends the browser to the sign-in page
  await page.waitForURL(/\/login\.html/);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password").fill(PASSWORDS[user]);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "My faxes" }).waitFor();
  return { ctx, page };
}

/** The page's live stream held back until the returned function is called. */
async function holdStream(page: Page): Promise<() => void> {
  let letThrough!: () => void;
  const mayStart = new Promise<void>((resolve) => (letThrough = resolve));
  await page.route("**/api/events", async (route) => {
    await mayStart;
    await route.continue();
  });
  return letThrough;
}

/** A fax for alice through the store's accept path (as mail would queue it). */
async function queued(subject: string, number: string, scheduledAt?: string) {
  const dir = path.join(rig.dir, "in");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${subject}.pdf`);
  writeFileSync(file, TEST_PDF);
  const { job } = await rig.gw.store.enqueue({
    source: "smtp",
    user: "alice",
    recipients: [{ number }],
    documents: [{ path: file, name: `${subject}.pdf`, contentType: "application/pdf" }],
    // as mail without a cover page queues it: the subject only in the origin
    cover: { enabled: false },
    meta: { origin: { subject } },
    scheduledAt: scheduledAt ?? null,
  });
  return job;
}

describe.skipIf(!hasChromium)("web console in chromium", () => {
  beforeAll(async () => {
    rig = await startGateway(consoleGateway({ delayMs: 1500 }));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await rig?.stop();
  });

  it("signs in, and refuses a wrong password with a message", async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${rig.url("web")}/login.html`);
    await page.getByLabel("User name").fill("alice");
    await page.getByLabel("Password").fill("not-it");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect
      .poll(() => page.getByRole("status").textContent(), { timeout: 10_000 })
      .toMatch(/wrong user name or password/);
    // a clerk is told it did not work, not how the admin sets passwords
    expect(await page.getByRole("status").textContent()).toBe("wrong user name or password");
    await ctx.close();
    const { ctx: ok, page: list } = await signedIn("alice");
    // the page fills the navigation in once it has asked who is signed in
    await expect.poll(() => list.getByRole("navigation", { name: "Main" }).textContent()).toContain("alice");
    await ok.close();
  }, 30_000);

  it("shows a new fax and its delivery in the list without a reload", async () => {
    const { ctx, page } = await signedIn("alice");
    await page.evaluate(() => ((globalThis as unknown as { notReloaded: boolean }).notReloaded = true));
    const job = await queued("Live one", "+15550104242");
    const row = page.locator(`tr[data-job="${job.id}"]`);
    await row.waitFor({ timeout: 15_000 });
    await row.locator(".badge.s-delivered").waitFor({ timeout: 30_000 });
    expect(await row.locator(".badge").textContent()).toBe("delivered");
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await expect.poll(() => page.getByRole("status").textContent()).toMatch(/Live one: delivered/);
    await shot(page, "list");
    await page.setViewportSize({ width: 390, height: 760 });
    await shot(page, "list-phone");
    await ctx.close();
  }, 60_000);

  it("renders the preview with pdf.js, and resends to another number", async () => {
    const job = await queued("Preview me", "+15550104343");
    const { ctx, page } = await signedIn("alice");
    await page.goto(`${rig.url("web")}/fax.html?id=${job.id}`);
    const canvas = page.locator('#preview canvas[data-page="1"]');
    await canvas.waitFor({ timeout: 20_000 });
    // the test page's text is drawn: some pixels are dark
    type Canvas = {
      width: number;
      height: number;
      getContext(k: "2d"): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } };
    };
    const dark = await canvas.evaluate((el) => {
      const c = el as unknown as Canvas;
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i]! < 100 && d[i + 3]! > 0) n++;
      return n;
    });
    expect(dark).toBeGreaterThan(50);
    await page.locator("tr .badge.s-delivered").waitFor({ timeout: 30_000 });
    await shot(page, "fax");
    await page.getByLabel(/^To \(numbers or contact names/).fill("555 010 4545");
    // a resend is asked once more, naming where it goes
    const asked: string[] = [];
    page.once("dialog", (d) => {
      asked.push(d.message());
      void d.accept();
    });
    await page.getByRole("button", { name: "Resend" }).click();
    await page.waitForURL((u) => u.searchParams.get("id") !== job.id);
    expect(asked).toEqual(["Send this fax again to 555 010 4545?"]);
    const newId = new URL(page.url()).searchParams.get("id")!;
    const again = await rig.gw.store.getJob(newId);
    expect(again!.user).toBe("alice");
    expect(again!.recipients.map((r) => r.number)).toEqual(["+15550104545"]);
    expect(again!.meta.origin).toMatchObject({ resendOf: job.id });
    expect(again!.documents.map((d) => d.bytes)).toEqual([TEST_PDF.length]);
    await ctx.close();
  }, 60_000);

  it("a change the live stream never tells of (made before it started) still shows: the page looks again when the stream opens", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const job = await queued("Held while connecting", "+15550104747", later);
    const { ctx, page: watcher } = await signedIn("alice");
    // another tab's stream, open before the change: once it hears of the hold, the server has
    // told every stream open then, and a stream opened later never hears of it
    await watcher.evaluate(
      () =>
        new Promise<void>((resolve) => {
          const w = globalThis as unknown as {
            heard: string[];
            EventSource: new (url: string) => { addEventListener(k: string, f: (ev: { data: string }) => void): void };
          };
          w.heard = [];
          const es = new w.EventSource("/api/events");
          es.addEventListener("open", () => resolve());
          es.addEventListener("job", (ev) => {
            const j = JSON.parse(ev.data) as { id: string; state: string };
            w.heard.push(`${j.id} ${j.state}`);
          });
        }),
    );
    const page = await ctx.newPage();
    const letThrough = await holdStream(page);
    await page.goto(`${rig.url("web")}/fax.html?id=${job.id}`);
    await page.locator("#summary .badge.s-queued").waitFor();
    await rig.gw.store.operate(job.id, "hold");
    await expect
      .poll(() => watcher.evaluate(() => (globalThis as unknown as { heard: string[] }).heard), { timeout: 10_000 })
      .toContain(`${job.id} held`);
    letThrough();
    await page.locator("#summary .badge.s-held").waitFor({ timeout: 10_000 });
    // the same on the list
    const list = await ctx.newPage();
    const listThrough = await holdStream(list);
    await list.goto(`${rig.url("web")}/`);
    const row = list.locator(`tr[data-job="${job.id}"]`);
    await row.locator(".badge.s-held").waitFor();
    await rig.gw.store.operate(job.id, "release");
    await expect
      .poll(() => watcher.evaluate(() => (globalThis as unknown as { heard: string[] }).heard), { timeout: 10_000 })
      .toContain(`${job.id} queued`);
    listThrough();
    await row.locator(".badge.s-queued").waitFor({ timeout: 10_000 });
    await ctx.close();
  }, 60_000);

  it("cancels a fax that is still waiting, after asking", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const job = await queued("Cancel me", "+15550104646", later);
    const { ctx, page } = await signedIn("alice");
    await page.goto(`${rig.url("web")}/fax.html?id=${job.id}`);
    // the page's title is the subject although the fax has no cover page
    await page.getByRole("heading", { name: "Cancel me", exact: true }).waitFor();
    // asked first: saying no leaves the fax waiting
    // (a click does not return while its dialog is open: the dialog is answered by its handler)
    const asked: string[] = [];
    page.once("dialog", (d) => {
      asked.push(d.message());
      void d.dismiss();
    });
    await page.getByRole("button", { name: "Cancel" }).click();
    expect(asked).toEqual(["Cancel this fax? It will not be sent."]);
    expect((await rig.gw.store.getJob(job.id))!.state).toBe("queued");
    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.locator("#summary .badge.s-cancelled").waitFor();
    expect((await rig.gw.store.getJob(job.id))!.state).toBe("cancelled");
    // nothing left to cancel: the button is gone
    expect(await page.getByRole("button", { name: "Cancel" }).count()).toBe(0);
    await ctx.close();
  }, 30_000);

  it("uploads a new fax with a cover page", async () => {
    const { ctx, page } = await signedIn("alice");
    await page.getByRole("link", { name: "Send a fax" }).click();
    await page.getByLabel(/^To:/).fill("Acme Billing, 555 010 4747");
    await page
      .getByLabel(/^Documents/)
      .setInputFiles({ name: "contract.pdf", mimeType: "application/pdf", buffer: TEST_PDF });
    await page.getByLabel("Add a cover page").check();
    await page.getByLabel("Subject").fill("Signed contract");
    await page.getByLabel(/^Notes/).fill("Two copies, please.");
    await shot(page, "send");
    await page.getByRole("button", { name: "Send" }).click();
    await page.waitForURL(/\/fax\.html\?id=/);
    await page.getByRole("heading", { name: "Signed contract" }).waitFor();
    const job = await rig.gw.store.getJob(new URL(page.url()).searchParams.get("id")!);
    expect(job!.user).toBe("alice");
    // the contact name was looked up with alice's key
    expect(job!.recipients.map((r) => [r.number, r.name])).toEqual([
      ["+15550100100", "Acme Billing"],
      ["+15550104747", null],
    ]);
    expect(job!.cover).toMatchObject({ enabled: true, subject: "Signed contract", notes: "Two copies, please." });
    expect(job!.documents.map((d) => d.name)).toEqual(["contract.pdf"]);
    await ctx.close();
  }, 30_000);

  it("cannot reach another user's fax by its URL", async () => {
    const job = await queued("Alice private", "+15550104848");
    const { ctx, page } = await signedIn("bob");
    await page.goto(`${rig.url("web")}/fax.html?id=${job.id}`);
    await page.getByRole("heading", { name: "No such fax" }).waitFor();
    expect(await page.content()).not.toContain("Alice private");
    const api = await page.request.get(`${rig.url("web")}/api/jobs/${job.id}/documents/0`);
    expect(api.status()).toBe(404);
    await page.goto(`${rig.url("web")}/`);
    await page.locator("#jobs tbody tr").first().waitFor();
    expect(await page.locator("#jobs").textContent()).not.toContain("Alice private");
    await ctx.close();
  }, 30_000);

  it("lists a received fax and previews it; another user cannot fetch it", async () => {
    const messageId = await emulatorInbound(
      rig.emu,
      { email: "alice@example.com", callerId: "+15557654321" },
      TEST_PDF,
      "scan.pdf",
    );
    const { ctx, page } = await signedIn("alice");
    // written as every surface writes a number (src/format.ts), not the service's raw caller id
    await page.locator("#inbound").getByText("+1 555-765-4321").waitFor({ timeout: 15_000 });
    await page.locator("#inbound").getByRole("link", { name: "Preview" }).first().click();
    await page.locator('#preview canvas[data-page="1"]').waitFor({ timeout: 20_000 });
    await ctx.close();
    const bob = await signedIn("bob");
    const r = await bob.page.request.get(`${rig.url("web")}/api/inbound/${messageId}/pdf`);
    expect(r.status()).toBe(404);
    await bob.ctx.close();
  }, 60_000);

  it("shows an operator the queue", async () => {
    await queued("Held one", "+15550104949", new Date(Date.now() + 3_600_000).toISOString()).then((j) =>
      rig.gw.store.operate(j.id, "hold"),
    );
    const { ctx, page } = await signedIn("ops");
    await page.getByRole("link", { name: "Queue" }).click();
    await page.getByRole("heading", { name: /^Held \(\d+\)/ }).waitFor();
    await expect.poll(() => page.locator("#counts").textContent()).toMatch(/on hold\s*\d/);
    await shot(page, "queue");
    await ctx.close();
  }, 30_000);
  it("the timeline names who cancelled (the owner, or an operator by name), in local time", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const mine = await queued("Owner cancels", "+15550105151", later);
    const theirs = await queued("Operator cancels", "+15550105353", later);
    const cancel = async (page: Page, id: string) => {
      await page.goto(`${rig.url("web")}/fax.html?id=${id}`);
      await page.locator("#recipients tbody tr").waitFor();
      // the waiting reason's time is shown like every other time on the page, not as ISO 8601
      const scheduled = await page.locator("#recipients tbody tr").textContent();
      const local = await page.evaluate(
        (iso) => new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso)),
        later,
      );
      expect(scheduled).toContain(`scheduled for ${local}`);
      expect(scheduled).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:/);
      page.once("dialog", (d) => void d.accept());
      await page.getByRole("button", { name: "Cancel" }).click();
      await page.locator("#summary .badge.s-cancelled").waitFor();
    };
    const alice = await signedIn("alice");
    await cancel(alice.page, mine.id);
    await expect.poll(() => alice.page.locator("#timeline").textContent()).toMatch(/Cancelled — by alice(?!,)/);
    await alice.ctx.close();
    const ops = await signedIn("ops");
    await cancel(ops.page, theirs.id);
    await expect.poll(() => ops.page.locator("#timeline").textContent()).toContain("Cancelled — by ops, an operator");
    await ops.page.locator("#timeline").scrollIntoViewIfNeeded();
    await shot(ops.page, "cancelled-by");
    await ops.ctx.close();
  }, 60_000);

  it("says the service's progress as pages sent, and the Tries column counts the dialling", async () => {
    const job = await queued("Progress words", "+15550105454");
    await waitUntil(async () => (await rig.gw.store.getJob(job.id))?.state === "delivered", "the fax delivered");
    const done = (await rig.gw.store.getJob(job.id))!;
    const events = await rig.gw.store.listEvents(job.id);
    // the service reported progress while the fax was processing ("page 0 of 1, attempt 0")
    expect(events.some((e) => e.transition === "progress")).toBe(true);
    const { ctx, page } = await signedIn("alice");
    await page.goto(`${rig.url("web")}/fax.html?id=${job.id}`);
    await page.locator("#timeline li").first().waitFor();
    const timeline = (await page.locator("#timeline").textContent()) ?? "";
    expect(timeline).toMatch(/Being faxed — \d+ of \d+ pages sent/);
    expect(timeline).not.toMatch(/attempt \d/);
    const tries = Math.max(done.recipients[0]!.attempts, done.recipients[0]!.faxAttempt ?? 0);
    expect(await page.locator('#recipients td[data-label="Tries"]').textContent()).toBe(String(tries));
    await expect.poll(() => page.locator("#fax").textContent()).toContain("Tries: how often the number was dialled");
    await ctx.close();
  }, 60_000);

  it("a non-operator opening the operator page gets one sentence; an operator sees faxes and numbers apart", async () => {
    const { ctx, page } = await signedIn("alice");
    await page.goto(`${rig.url("web")}/admin.html`);
    await expect
      .poll(() => page.getByRole("status").textContent())
      .toBe("This page shows the whole gateway's queue and is for operators only; your own faxes are under My faxes.");
    expect(await page.locator("#volume").isVisible()).toBe(false);
    expect(await page.locator("#counts").isVisible()).toBe(false);
    await shot(page, "operators-only");
    await ctx.close();
    const ops = await signedIn("ops");
    const row = async () => {
      await ops.page.goto(`${rig.url("web")}/admin.html`);
      await ops.page.locator("#volume tbody tr").first().waitFor();
      const r = ops.page.locator("#volume tbody tr", { hasText: "bob" });
      const cell = async (label: string) => Number(await r.locator(`td[data-label="${label}"]`).textContent());
      return { faxes: await cell("Faxes"), numbers: await cell("Numbers") };
    };
    const before = await row();
    expect(await ops.page.locator("#volume thead").textContent()).toBe("UserFaxesNumbersDeliveredFailedPages");
    // one fax to two numbers: 1 fax, 2 numbers
    mkdirSync(path.join(rig.dir, "in"), { recursive: true });
    const file = path.join(rig.dir, "in", "two.pdf");
    writeFileSync(file, TEST_PDF);
    await rig.gw.store.enqueue({
      source: "smtp",
      user: "bob",
      recipients: [{ number: "+15550105656" }, { number: "+15550105757" }],
      documents: [{ path: file, name: "two.pdf", contentType: "application/pdf" }],
      cover: { enabled: false },
      meta: { origin: { subject: "Two numbers" } },
      scheduledAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(await row()).toEqual({ faxes: before.faxes + 1, numbers: before.numbers + 2 });
    await ops.ctx.close();
  }, 60_000);
});
