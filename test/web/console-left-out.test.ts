// The console in real Chromium keeps the one rule of mail and print: a file that cannot be faxed
// refuses the fax naming each such file (intake.partial: refuse, the default), or, when the
// operator chose `send`, the fax goes without it and its page says so first. A send with neither
// a file nor notes asks for a file. FAXGATE_SCREENSHOTS=1 writes the pages into docs/images/.
import { existsSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_PDF } from "../helpers/store.js";
import { PASSWORDS, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(
    `console left-out tests skipped: no chromium at ${CHROMIUM} (apt-get install chromium, or set FAXGATE_CHROMIUM)`,
  );
const SHOTS =
  process.env.FAXGATE_SCREENSHOTS === "1"
    ? path.resolve(__dirname, "../../docs/images")
    : path.join(os.tmpdir(), "faxgate-console-shots");
const ZIP = Buffer.concat([Buffer.from("PK\x03\x04", "latin1"), Buffer.alloc(200, 1)]);

let browser: Browser;
beforeAll(async () => {
  if (hasChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `console-${name}.png`), fullPage: true });
}

async function sendPage(rig: TestGateway): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const page = await ctx.newPage();
  await page.goto(`${rig.url("web")}/login.html?next=/send.html`);
  await page.getByLabel("User name").fill("alice");
  await page.getByLabel("Password").fill(PASSWORDS.alice);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Send a fax" }).waitFor();
  // the heading is static HTML; the header's links come from send.js's module, once its submit
  // handler is in place (a Send clicked before it posts the form natively, and no status shows)
  await page.getByRole("link", { name: "Send a fax" }).waitFor();
  return page;
}

describe.skipIf(!hasChromium)("console send, intake.partial: refuse (default)", () => {
  let rig: TestGateway;
  beforeAll(async () => {
    rig = await startGateway(consoleGateway());
  }, 120_000);
  afterAll(async () => {
    await rig?.stop();
  });

  it("a PDF with a .zip beside it is refused naming archive.zip, and nothing is queued", async () => {
    const page = await sendPage(rig);
    await page.getByLabel(/^To:/).fill("555 010 4848");
    await page.getByLabel(/^Documents/).setInputFiles([
      { name: "records.pdf", mimeType: "application/pdf", buffer: TEST_PDF },
      { name: "archive.zip", mimeType: "application/zip", buffer: ZIP },
    ]);
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator("#status.error").filter({ hasText: "archive.zip" }).waitFor();
    expect(await page.locator("#status").textContent()).toBe(
      "archive.zip: .zip of type application/zip cannot be faxed (PDF, TIFF, PNG, JPEG, plain text or office documents only); nothing was sent, so that no file is left out",
    );
    await shot(page, "send-refused");
    expect(await rig.gw.store.listJobs({ user: "alice" })).toEqual([]);
    await page.context().close();
  }, 60_000);

  it("neither a file nor notes: the console asks for a file", async () => {
    const page = await sendPage(rig);
    await page.getByLabel(/^To:/).fill("555 010 4848");
    await page.getByLabel("Subject").fill("Only a subject");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator("#status.error").filter({ hasText: "choose a file" }).waitFor();
    expect(await rig.gw.store.listJobs({ user: "alice" })).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe.skipIf(!hasChromium)("console send, intake.partial: send", () => {
  let rig: TestGateway;
  beforeAll(async () => {
    rig = await startGateway(consoleGateway({ config: { intake: { partial: "send" } } }));
  }, 120_000);
  afterAll(async () => {
    await rig?.stop();
  });

  it("the PDF goes without archive.zip and the fax page says so before anything else", async () => {
    const page = await sendPage(rig);
    await page.getByLabel(/^To:/).fill("555 010 4849");
    await page.getByLabel(/^Documents/).setInputFiles([
      { name: "records.pdf", mimeType: "application/pdf", buffer: TEST_PDF },
      { name: "archive.zip", mimeType: "application/zip", buffer: ZIP },
    ]);
    await page.getByRole("button", { name: "Send" }).click();
    await page.waitForURL(/\/fax\.html\?id=/);
    const warn = page.locator("#without");
    await warn.waitFor();
    expect(await warn.textContent()).toBe("Sent without archive.zip: this file could not be faxed.");
    // the first thing under the title
    expect(await page.locator("#fax > p").first().getAttribute("id")).toBe("without");
    await page.getByRole("heading", { name: "Left out of the fax" }).waitFor();
    await shot(page, "sent-without");
    const job = await rig.gw.store.getJob(new URL(page.url()).searchParams.get("id")!);
    expect(job!.documents.map((d) => d.name)).toEqual(["records.pdf"]);
    expect(job!.meta.leftOut).toEqual([expect.objectContaining({ name: "archive.zip", sentWithout: true })]);
    await page.context().close();
  }, 60_000);
});
