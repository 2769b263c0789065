// Issue 48 item 4 in a real browser (chromium via playwright-core): whatever `next=` the sign-in
// page is opened with, signing in lands on the console's own origin. The forms are the ones a
// first-characters test lets through and a browser reads as another host: a backslash (which a
// browser takes for a slash), a tab or newline inside (which URL parsing drops), a scheme without
// slashes, an encoded "//". Every request the browser makes to another host is caught and recorded,
// so a test run never leaves the machine.
import { existsSync } from "node:fs";
import http from "node:http";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);

let rig: TestGateway;
let browser: Browser;

/** POST /login with an Origin header as a browser on `origin` sends it; answers the status. */
function signInFrom(origin: string): Promise<number> {
  const body = new URLSearchParams({ user: "alice", password: PASSWORDS.alice }).toString();
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${rig.url("web")}/login`,
      { method: "POST", headers: { origin, "content-type": "application/x-www-form-urlencoded" } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Opens /login.html?<query>, signs in as alice, and answers where the browser ended up. */
async function signInWith(query: string): Promise<{ url: URL; offSite: string[] }> {
  const ctx = await browser.newContext();
  const offSite: string[] = [];
  const own = new URL(rig.url("web")).host;
  await ctx.route(
    (u) => u.host !== own,
    (route) => {
      offSite.push(route.request().url());
      return route.fulfill({ status: 200, contentType: "text/html", body: "<h1>another site</h1>" });
    },
  );
  try {
    const page = await ctx.newPage();
    await page.goto(`${rig.url("web")}/login.html?${query}`);
    await page.getByLabel("User name").fill("alice");
    await page.getByLabel("Password").fill(PASSWORDS.alice);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => !u.pathname.endsWith("/login.html"), { timeout: 15_000 });
    return { url: new URL(page.url()), offSite };
  } finally {
    await ctx.close();
  }
}

describe.skipIf(!hasChromium)("sign-in's next= in chromium", () => {
  beforeAll(async () => {
    rig = await startGateway(consoleGateway());
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await rig?.stop();
  });

  // what next= says once the browser has decoded the query (the value login.js reads)
  const offSite: Array<[string, string]> = [
    ["a backslash after the slash", "/\\evil.example/"],
    ["two slashes", "//evil.example/"],
    ["two backslashes", "/\\\\evil.example/"],
    ["a slash and a backslash", "/\\/evil.example/"],
    ["a tab between the slashes", "/\t/evil.example/"],
    ["a newline between the slashes", "/\n/evil.example/"],
    ["CR LF between the slashes", "/\r\n/evil.example/"],
    ["a leading tab", "\t//evil.example/"],
    ["a scheme without slashes", "https:evil.example"],
    ["a whole address", "http://evil.example/"],
    ["a javascript: address", "javascript:location.href='http://evil.example/'"],
  ];

  it.each(offSite)(
    "next= with %s lands on the console's list",
    async (_what, next) => {
      const { url, offSite: requests } = await signInWith(`next=${encodeURIComponent(next)}`);
      expect(url.origin).toBe(rig.url("web"));
      expect(url.pathname).toBe("/");
      expect(requests).toEqual([]);
    },
    30_000,
  );

  it("an encoded // in the address bar (%2F%2F) is the same as //", async () => {
    const { url, offSite: requests } = await signInWith("next=%2F%2Fevil.example%2F");
    expect(url.origin).toBe(rig.url("web"));
    expect(url.pathname).toBe("/");
    expect(requests).toEqual([]);
  }, 30_000);

  it("a doubly encoded // stays a path on the console", async () => {
    const { url, offSite: requests } = await signInWith("next=%252F%252Fevil.example");
    expect(url.origin).toBe(rig.url("web"));
    expect(requests).toEqual([]);
  }, 30_000);

  it("a page of the console with a query and a fragment is where sign-in goes", async () => {
    const { url, offSite: requests } = await signInWith(`next=${encodeURIComponent("/inbox.html?x=1#y")}`);
    expect(url.href).toBe(`${rig.url("web")}/inbox.html?x=1#y`);
    expect(requests).toEqual([]);
  }, 30_000);

  it("the page a signed-out visit was sent from is where sign-in returns", async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${rig.url("web")}/send.html?to=Acme`);
    await page.waitForURL(/\/login\.html\?next=/);
    await page.getByLabel("User name").fill("alice");
    await page.getByLabel("Password").fill(PASSWORDS.alice);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/send.html", { timeout: 15_000 });
    expect(page.url()).toBe(`${rig.url("web")}/send.html?to=Acme`);
    await ctx.close();
  }, 30_000);

  it("a sign-in posted from another origin is refused; from the console's own it is taken", async () => {
    const own = new URL(rig.url("web"));
    expect(await signInFrom("http://evil.example")).toBe(403);
    expect(await signInFrom("null")).toBe(403);
    // the same host under another port is another origin
    expect(await signInFrom(`http://${own.hostname}:${Number(own.port) + 1}`)).toBe(403);
    expect(await signInFrom(rig.url("web"))).toBe(200);
  });
});
