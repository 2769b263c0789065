// Issue 50 item 4: console sign-in through a real OpenID provider (oidc-provider, test/helpers/oidc.ts)
// in Chromium, over HTTPS both sides: the redirect, the provider's login page, the callback. With
// web.oidc.requireMfa a sign-in whose `amr` names no second factor is refused with a page saying
// so; a person the gateway does not know, or outside web.oidc.groups, is refused; each refusal is
// a ledger row with its reason. Sign-out ends the faxgate session and signs out at the provider.
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { testLedger } from "../helpers/ledger.js";
import { freePort } from "../helpers/net.js";
import { oidcSection, startOidcProvider, type TestProvider } from "../helpers/oidc.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);

let rig: TestGateway;
let provider: TestProvider;
let browser: Browser;

/** From the console's sign-in page through the provider as `account`; answers the page where it ends. */
async function signInAs(account: string, mfa: boolean): Promise<Page> {
  const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await ctx.newPage();
  await page.goto(`${rig.url("web")}/login.html?next=${encodeURIComponent("/inbox.html")}`);
  await page.getByRole("link", { name: "Sign in with your organisation's account" }).click();
  await page.waitForURL((u) => u.origin === provider.issuer);
  await page.getByLabel("Account").fill(account);
  if (mfa) await page.getByLabel("Used a second factor").check();
  await page.getByRole("button", { name: "Continue" }).click();
  await page
    .waitForURL((u) => u.origin === rig.url("web") && u.pathname !== "/oidc/callback", { timeout: 15_000 })
    .catch(() => {});
  await page.waitForLoadState("load");
  return page;
}

async function sessionUser(page: Page): Promise<string | null> {
  return page.evaluate(async () => {
    const r = await fetch("/api/session", { credentials: "same-origin" });
    return r.ok ? ((await r.json()) as { user: string }).user : null;
  });
}

async function lastConsoleRow() {
  const rows = (await testLedger(rig.gw.store).rows()).filter((r) => r.door === "console");
  return rows.at(-1)!;
}

describe.skipIf(!hasChromium)("console sign-in through an OpenID provider", () => {
  beforeAll(async () => {
    const port = await freePort();
    const console = `https://127.0.0.1:${port}`;
    provider = await startOidcProvider({
      accounts: {
        alice: { email: "alice@example.com", groups: ["fax-users"] },
        ops: { email: "ADMIN@example.com", groups: ["fax-admins"] },
        bob: { email: "bob@example.com", groups: ["accounting"] },
        stranger: { email: "stranger@example.org", groups: ["fax-users"] },
      },
      redirectUri: `${console}/oidc/callback`,
      postLogoutRedirectUri: `${console}/login.html`,
    });
    rig = await startGateway(
      consoleGateway({
        tls: true,
        config: {
          web: {
            listen: `127.0.0.1:${port}`,
            oidc: oidcSection(provider, { groups: ["fax-users", "fax-admins"], requireMfa: true }),
          },
        },
      }),
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await rig?.stop();
    await provider?.stop();
  });

  it("a known person with a second factor in amr is signed in and lands where they were going", async () => {
    const page = await signInAs("alice", true);
    expect(new URL(page.url()).pathname).toBe("/inbox.html");
    expect(await sessionUser(page)).toBe("alice");
    const row = await lastConsoleRow();
    expect(row.action).toBe("signed-in");
    expect(row.object).toEqual({ kind: "person", id: "alice" });
    expect(row.detail).toEqual({ via: "oidc", mfa: true });
    await page.context().close();
  }, 60_000);

  it("an operator is matched by e-mail whatever its case", async () => {
    const page = await signInAs("ops", true);
    expect(await sessionUser(page)).toBe("ops");
    await page.context().close();
  }, 60_000);

  it("without a second factor in amr the sign-in is refused with a page saying why", async () => {
    const page = await signInAs("alice", false);
    await expect(page.locator("#why").textContent()).resolves.toContain("second factor");
    expect(await sessionUser(page)).toBeNull();
    const row = await lastConsoleRow();
    expect(row.action).toBe("sign-in-failed");
    expect(row.object).toEqual({ kind: "person", id: "alice" });
    expect(row.detail).toEqual({ via: "oidc", reason: "no-second-factor" });
    await page.context().close();
  }, 60_000);

  it("a person the gateway does not know is refused", async () => {
    const page = await signInAs("stranger", true);
    await expect(page.locator("#why").textContent()).resolves.toContain("not a person this gateway knows");
    expect(await sessionUser(page)).toBeNull();
    const row = await lastConsoleRow();
    expect(row.detail).toEqual({ via: "oidc", reason: "unknown-person" });
    // the address the provider named is not kept
    expect(JSON.stringify(row)).not.toContain("stranger");
    await page.context().close();
  }, 60_000);

  it("a person outside the allowed groups is refused", async () => {
    const page = await signInAs("bob", true);
    await expect(page.locator("#why").textContent()).resolves.toContain("none of the groups");
    expect(await sessionUser(page)).toBeNull();
    expect((await lastConsoleRow()).detail).toEqual({ via: "oidc", reason: "not-in-groups" });
    await page.context().close();
  }, 60_000);

  it("a callback without a sign-in begun in this browser is refused", async () => {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await ctx.newPage();
    const r = await page.goto(`${rig.url("web")}/oidc/callback?code=forged&state=forged`);
    expect(r?.status()).toBe(400);
    await expect(page.locator("#why").textContent()).resolves.toContain("another browser");
    await ctx.close();
  }, 60_000);

  it("sign-out ends the faxgate session and signs out at the provider", async () => {
    const page = await signInAs("alice", true);
    expect(await sessionUser(page)).toBe("alice");
    const before = provider.logouts;
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((u) => u.origin === provider.issuer);
    // oidc-provider asks whether to sign out there as well
    await page
      .getByRole("button", { name: /yes|sign.?out/i })
      .first()
      .click();
    await page.waitForURL((u) => u.origin === rig.url("web") && u.pathname === "/login.html");
    expect(provider.logouts).toBe(before + 1);
    expect(await sessionUser(page)).toBeNull();
    await page.context().close();
  }, 60_000);
});
