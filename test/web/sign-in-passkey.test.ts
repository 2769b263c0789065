// Issue 50 item 5 in a real browser: passkeys with Chromium's virtual authenticator (CDP
// WebAuthn.addVirtualAuthenticator through playwright-core). An operator, whose role
// web.factors.require names, enrols a passkey at the first sign-in; the next sign-in asks for
// it after the password; an authenticator without the passkey signs no one in.
import { existsSync } from "node:fs";
import { chromium, type Browser, type CDPSession, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, consoleGateway, pageWithPasskeyDevice } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { testLedger } from "../helpers/ledger.js";
import { freePort } from "../helpers/net.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);

let rig: TestGateway;
let browser: Browser;
// a passkey is bound to a host name, never to an address: the console is reached as localhost
let base = "";

async function passwordStep(page: Page): Promise<void> {
  await page.goto(`${base}/login.html`);
  await page.getByLabel("User name").fill("ops");
  await page.getByLabel("Password").fill(PASSWORDS.ops);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function sessionUser(page: Page): Promise<string | null> {
  return page.evaluate(async () => {
    const r = await fetch("/api/session", { credentials: "same-origin" });
    return r.ok ? ((await r.json()) as { user: string }).user : null;
  });
}

const lastRow = async (action: string) =>
  (await testLedger(rig.gw.store).rows()).filter((r) => r.action === action).at(-1);

describe.skipIf(!hasChromium)("passkeys in chromium's virtual authenticator", () => {
  let page: Page;
  let cdp: CDPSession;
  let authenticatorId = "";

  beforeAll(async () => {
    const port = await freePort();
    base = `http://localhost:${port}`;
    rig = await startGateway(
      consoleGateway({
        config: {
          web: { listen: `127.0.0.1:${port}`, publicUrl: base, factors: { require: { admin: "passkey" } } },
        },
      }),
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    ({ page, cdp, authenticatorId } = await pageWithPasskeyDevice(browser));
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await rig?.stop();
  });

  it("the first sign-in of an operator enrols a passkey before the session starts", async () => {
    await passwordStep(page);
    await page.getByRole("button", { name: "Set up a passkey" }).waitFor({ state: "visible" });
    // only a passkey is asked of this role: no authenticator app offered
    expect(await page.locator("#enrol-totp").isHidden()).toBe(true);
    expect(await sessionUser(page)).toBeNull();
    await page.getByRole("button", { name: "Set up a passkey" }).click();
    await page.waitForURL((u) => u.pathname === "/");
    expect(await sessionUser(page)).toBe("ops");
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(await lastRow("factor-enrolled")).toMatchObject({
      object: { kind: "person", id: "ops" },
      detail: { kind: "passkey" },
    });
  }, 60_000);

  it("the next sign-in asks for the passkey after the password", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((u) => u.pathname === "/login.html");
    expect(await sessionUser(page)).toBeNull();
    await passwordStep(page);
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await page.waitForURL((u) => u.pathname === "/");
    expect(await sessionUser(page)).toBe("ops");
    expect((await lastRow("signed-in"))?.detail).toEqual({ via: "password", factor: "passkey" });
    // the console's own page lists it; an operator also sees the reset form
    await page.getByRole("link", { name: "Sign-in factors" }).click();
    await page.locator("#factors tbody tr").first().waitFor();
    expect(await page.locator("#factors tbody tr td").first().textContent()).toBe("Passkey");
    expect(await page.getByRole("button", { name: "Reset their factors" }).isVisible()).toBe(true);
  }, 60_000);

  it("an authenticator without the passkey signs no one in", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((u) => u.pathname === "/login.html");
    await cdp.send("WebAuthn.clearCredentials", { authenticatorId });
    await passwordStep(page);
    await page.getByRole("button", { name: "Use a passkey" }).click();
    // the browser finds no credential for this site and gives up; no session follows
    await page.waitForFunction("document.getElementById('status').textContent !== ''", null, { timeout: 30_000 });
    expect(new URL(page.url()).pathname).toBe("/login.html");
    expect(await sessionUser(page)).toBeNull();
  }, 60_000);
});
