// The shared inbox in a real browser (Debian's chromium driven by playwright-core) against a whole
// gateway: a fax arrives at the emulator on the referrals number, the gateway's own poller keeps it
// and routes it to the group's inbox, a member takes it in the console, and the other member
// cannot take it again.
import { existsSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emulatorInbound } from "../helpers/emulator.js";
import { pdfWithPages } from "../emulator/api.js";
import { PASSWORDS, signIn, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { waitUntil } from "../helpers/wait.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(
    `shared inbox browser test skipped: no chromium at ${CHROMIUM} (apt-get install chromium, or set FAXGATE_CHROMIUM)`,
  );
const SHOTS =
  process.env.FAXGATE_SCREENSHOTS === "1"
    ? path.resolve(__dirname, "../../docs/images")
    : path.join(os.tmpdir(), "faxgate-console-shots");

let rig: TestGateway;
let browser: Browser;

beforeAll(async () => {
  if (!hasChromium) return;
  rig = await startGateway(
    consoleGateway({
      outbox: true,
      config: {
        notify: {
          from: "faxgate@example.com",
          inbound: { enabled: true, interval: "1s", mailBacklog: true },
        },
        inbound: {
          groups: { referrals: { members: ["alice", "bob"] } },
          routes: [{ name: "referrals line", match: { dialled: "+15550100201" }, deliver: [{ inbox: "referrals" }] }],
        },
      },
    }),
  );
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await rig?.stop();
});

describe.skipIf(!hasChromium)("shared inbox in chromium", () => {
  it("a fax on the referrals number shows in the group inbox; bob takes it; alice cannot take it again", async () => {
    const messageId = await emulatorInbound(
      rig.emu,
      { email: "alice@example.com", callerId: "+15557654321", csid: "DR SMITH CLINIC", to: "+15550100201" },
      await pdfWithPages(2),
      "referral.pdf",
    );

    // the gateway's own poller keeps and routes it
    const kept = await waitUntil(
      async () => {
        const k = await rig.gw.store.listReceived({ messageId });
        return k.length > 0 ? k : null;
      },
      "the received fax kept",
      20_000,
    );
    expect(kept[0]).toMatchObject({ groups: ["referrals"], state: "new", dialled: "+15550100201" });
    const id = kept[0]!.id;

    const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(`${rig.url("web")}/login.html`);
    await page.getByLabel("User name").fill("bob");
    await page.getByLabel("Password").fill(PASSWORDS.bob);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "My faxes" }).waitFor();
    await page.getByRole("link", { name: "Shared inbox" }).click();
    await page.getByRole("heading", { name: "Shared inbox" }).waitFor();
    // the one received-fax page, numbers written as every surface writes them
    await page.getByRole("link", { name: "+1 555-765-4321" }).click();
    await page.getByRole("heading", { name: "Fax from +1 555-765-4321" }).waitFor();
    await page.getByRole("button", { name: "Take it" }).click();
    await page.locator("#state", { hasText: "taken by bob" }).waitFor();
    await page.locator('#preview[data-rendered="2"]').waitFor();
    await page.getByLabel("Note").fill("Booked for Tuesday");
    await page.getByRole("button", { name: "Save note" }).click();
    await page.locator("#timeline li", { hasText: "Booked for Tuesday" }).waitFor();
    await page.locator("#preview p", { hasText: "Received fax: 2 pages" }).waitFor();
    expect(await page.locator("#actions").textContent()).not.toContain("null");
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, "console-inbox.png"), fullPage: true });

    // alice, the other member, sees it taken and cannot take it; a non-member cannot see it at all
    const a = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const take = await fetch(`${rig.url("web")}/api/inbox/${id}/take`, {
      method: "POST",
      headers: { cookie: a.cookie, "x-csrf-token": a.csrf, "content-type": "application/json" },
      body: "{}",
    });
    expect(take.status).toBe(409);
    const ops = await signIn(rig.url("web"), "ops", PASSWORDS.ops);
    expect((await fetch(`${rig.url("web")}/api/inbox/${id}`, { headers: { cookie: ops.cookie } })).status).toBe(404);
    const events = await rig.gw.store.listReceivedEvents(id);
    expect(events.map((e) => `${e.action}:${e.actor ?? "-"}`)).toEqual([
      "stored:-",
      "routed:-",
      "taken:bob",
      "note:bob",
    ]);
    await ctx.close();
  });
});
