// Issue 48 item 1 at the attacker's level: the public MX mode (a real DNS server, DKIM-signed
// mail over real SMTP from a non-trusted loopback address) with smtp.senderAuth.confirmNewDestinations
// on. A first fax to a number alice never faxed is held and mails her (read from the outbox);
// nothing reaches the emulator. bob gets the console's 404 and the operator a 403 for Confirm;
// alice follows the mailed link in Chromium, signs in, sees the preview and the new number, and
// Confirm sends it, once. A second fax to the same number goes without asking. A fax nobody
// confirms is cancelled past confirmWait (the gateway's clock moved) with a notice, never sent.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { simpleParser } from "mailparser";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dkimKey, sendFrom } from "../helpers/dkim-mail.js";
import { startTestDns, type TestDns } from "../helpers/dns-server.js";
import { testLedger } from "../helpers/ledger.js";
import { waitUntil } from "../helpers/wait.js";
import { pdfWithPages } from "../emulator/api.js";
import { PASSWORDS, signIn, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`confirm-new browser test skipped: no chromium at ${CHROMIUM}`);

const KEY = dkimKey();
// 127.0.0.2: alice's mail server (SPF passes); the gateway trusts only 127.0.0.1
const SENDER_IP = "127.0.0.2";
const NEW = "+15557770002";
const UNCONFIRMED = "+15557770003";
const LETTER = Buffer.from(await pdfWithPages(1));

let dns: TestDns;
let rig: TestGateway;
let browser: Browser;
let outbox: string;
// the gateway's clock: real time plus what the test moves it on by
let skew = 0;

beforeAll(async () => {
  if (!hasChromium) return;
  dns = await startTestDns({
    "example.com": ["v=spf1 ip4:127.0.0.2 -all"],
    "sel._domainkey.example.com": [KEY.record],
  });
  outbox = path.join(os.tmpdir(), `faxgate-confirm-outbox-${process.pid}`);
  rig = await startGateway(
    consoleGateway({
      clock: { now: () => Date.now() + skew },
      config: {
        smtp: {
          listen: ["127.0.0.1:0"],
          domains: ["fax.example.com"],
          trustedNetworks: ["127.0.0.1/32"],
          senderAuth: { mode: "verify", confirmNewDestinations: true, confirmWait: "24h" },
        },
        dns: { servers: [dns.server], timeout: "500ms" },
        notify: { from: "faxgate@example.com", transport: `outbox:${outbox}` },
      },
    }),
  );
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await rig?.stop();
  await dns?.close();
});

/**
 * alice's signed mail to `number` at the fax domain, from her mail server; answers the job id.
 * Microsoft-shaped: the signature leaves To/Cc out, so the number is not proved; Google-shaped:
 * it covers them.
 */
async function mailFax(number: string, subject: string, shape: "microsoft" | "google" = "microsoft"): Promise<string> {
  const reply = await sendFrom(rig.smtpPort, {
    from: "alice@example.com",
    to: `${number.slice(1)}@fax.example.com`,
    ip: SENDER_IP,
    subject,
    // dated by the gateway's clock, which the expiry test moves on
    date: new Date(Date.now() + skew),
    sign: {
      domain: "example.com",
      key: KEY.privateKey,
      selector: "sel",
      ...(shape === "microsoft" ? { headerFieldNames: "from:date:subject:message-id" } : {}),
    },
    attachments: [{ filename: "letter.pdf", content: LETTER, contentType: "application/pdf" }],
  });
  const id = /queued as (\S+)/.exec(reply)?.[1];
  if (!id) throw new Error(`not queued: ${reply}`);
  return id;
}

/** The outbox mail whose subject matches, parsed. */
async function mailTo(subject: RegExp) {
  return waitUntil(async () => {
    for (const f of existsSync(outbox) ? readdirSync(outbox).filter((x) => x.endsWith(".eml")) : []) {
      const m = await simpleParser(readFileSync(path.join(outbox, f)));
      if (subject.test(m.subject ?? "")) return m;
    }
    return null;
  }, `a mail "${subject.source}" in the outbox`);
}

/** The fax service calls the job's recipients made (a send to the emulator counts). */
async function apiCallsFor(id: string): Promise<number> {
  const job = await rig.gw.store.getJob(id);
  return job!.recipients.reduce((n, r) => n + r.apiCalls, 0);
}

describe.skipIf(!hasChromium)("confirmNewDestinations in the public MX mode", () => {
  it("holds a first fax to a new number, mails alice, and her click in the console sends it once", async () => {
    const id = await mailFax(NEW, "Letter to a new clinic");
    const held = (await rig.gw.store.getJob(id))!;
    expect(held.state).toBe("held");
    expect(held.recipients.map((r) => [r.number, r.state, r.lastError])).toEqual([
      [NEW, "held", "waits for its owner to confirm this new number in the console"],
    ]);

    const mail = await mailTo(/^Confirm your fax to a new number/);
    expect(mail.to && "text" in mail.to ? mail.to.text : "").toBe("alice@example.com");
    expect(mail.subject).toBe(`Confirm your fax to a new number: ${NEW}`);
    expect(mail.text).toContain("It has not been sent.");
    // behind the link door (web/mailed-link.ts): a ledger row per click, dead after retention.links
    const link = /(https?:\/\/\S+\/m\?k=confirm&id=\S+)/.exec(mail.text ?? "")?.[1];
    expect(link).toMatch(new RegExp(`^${rig.url("web")}/m\\?k=confirm&id=${id}&t=\\d+$`));
    // the dispatcher had its chances: nothing went to the service
    await rig.gw.store.claimDue("probe", 10, 1000).then((g) => expect(g).toEqual([]));
    expect(await apiCallsFor(id)).toBe(0);

    // another user: the console's 404; an operator sees it but cannot confirm in alice's place
    const bob = await signIn(rig.url("web"), "bob", PASSWORDS.bob);
    const ops = await signIn(rig.url("web"), "ops", PASSWORDS.ops);
    const post = (who: { cookie: string; csrf: string }, csrf = who.csrf) =>
      fetch(`${rig.url("web")}/api/jobs/${id}/confirm`, {
        method: "POST",
        headers: { cookie: who.cookie, "x-csrf-token": csrf },
      });
    expect((await post(bob)).status).toBe(404);
    expect((await post(ops)).status).toBe(403);
    const alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    expect((await post(alice, "wrong")).status).toBe(403);
    expect((await rig.gw.store.getJob(id))!.state).toBe("held");

    // alice follows the mailed link: sign-in first, then the page
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(link!);
    await page.getByLabel("User name").fill("alice");
    await page.getByLabel("Password").fill(PASSWORDS.alice);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: /Confirm a fax to a new number: Letter to a new clinic/ }).waitFor();
    await page.locator("#new-numbers li", { hasText: NEW }).waitFor();
    await page.locator("#preview canvas").first().waitFor();
    await page.getByRole("button", { name: "Confirm and send" }).click();
    await page.locator("#lead", { hasText: "Confirmed: the fax is queued." }).waitFor();
    await ctx.close();
    // the click (signed out: no person yet) and alice's yes to the new number, hashed
    const rows = await testLedger(rig.gw.store).rows({ object: { kind: "job", id } });
    expect(
      rows.filter((r) => r.door === "link" || r.action === "confirmed").map((r) => [r.action, r.actor, r.object.kind]),
    ).toEqual([
      ["viewed", { kind: "person" }, "job"],
      ["confirmed", { kind: "person", id: "alice" }, "recipient"],
    ]);
    expect(rows.find((r) => r.action === "confirmed")!.numberHash).toMatch(/^[0-9a-f]{64}$/);

    const sent = await waitUntil(async () => {
      const j = await rig.gw.store.getJob(id);
      // the service took it (processing, then delivered): it was sent
      return j && ["processing", "delivered"].includes(j.recipients[0]!.state) ? j : null;
    }, "the confirmed fax sent to the service");
    expect(sent.recipients[0]!.apiCalls).toBeGreaterThan(0);
    // a second click (another tab): no second release
    const again = await post(alice);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { alreadyConfirmed?: boolean }).alreadyConfirmed).toBe(true);
    expect((await rig.gw.store.listEvents(id)).filter((e) => e.transition === "claim")).toHaveLength(1);

    // the number is faxed now: the next fax to it goes without asking
    const second = await mailFax(NEW, "Second letter");
    expect((await rig.gw.store.getJob(second))!.state).not.toBe("held");
  }, 120_000);

  it("a fax nobody confirms is cancelled after confirmWait with a notice, never sent", async () => {
    const id = await mailFax(UNCONFIRMED, "Replayed letter");
    expect((await rig.gw.store.getJob(id))!.state).toBe("held");
    await mailTo(new RegExp(`^Confirm your fax to a new number: \\${UNCONFIRMED}`));
    skew += 23 * 3_600_000;
    expect(await rig.gw.confirmExpiry.runOnce()).toBe(0);
    skew += 2 * 3_600_000;
    expect(await rig.gw.confirmExpiry.runOnce()).toBe(1);
    const ended = (await rig.gw.store.getJob(id))!;
    expect(ended.state).toBe("cancelled");
    expect(ended.recipients[0]!.lastError).toBe(
      "not confirmed by its owner: not confirmed within 24 hours; never sent",
    );
    const notice = await mailTo(/not sent|cancelled/i);
    expect(notice.text).toContain("it was not confirmed in time");
    expect(await apiCallsFor(id)).toBe(0);
    // too late: a click now moves nothing
    const alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const r = await fetch(`${rig.url("web")}/api/jobs/${id}/confirm`, {
      method: "POST",
      headers: { cookie: alice.cookie, "x-csrf-token": alice.csrf },
    });
    expect(r.status).toBe(409);
    expect(((await r.json()) as { error: string }).error).toMatch(/expired unconfirmed/);
  }, 60_000);

  it("never asks of a trusted network, of a user whose own switch is off, or where To is signed", async () => {
    // 127.0.0.1 is trustedNetworks: the relay there proved the person, who chose the number
    const reply = await sendFrom(rig.smtpPort, {
      from: "alice@example.com",
      to: "15557770004@fax.example.com",
      ip: "127.0.0.1",
      subject: "From the office relay",
      attachments: [{ filename: "letter.pdf", content: LETTER, contentType: "application/pdf" }],
    });
    const trusted = /queued as (\S+)/.exec(reply)?.[1];
    expect(trusted, reply).toBeTruthy();
    expect((await rig.gw.store.getJob(trusted!))!.state).not.toBe("held");
    // users[].confirmNewDestinations: false overrides smtp.senderAuth's switch
    await rig.reloadWith((c) => ({
      ...c,
      users: c.users.map((u) => (u.name === "alice" ? { ...u, confirmNewDestinations: false } : u)),
    }));
    const id = await mailFax("+15557770005", "Alice opted out");
    expect((await rig.gw.store.getJob(id))!.state).not.toBe("held");
    await rig.reloadWith((c) => ({
      ...c,
      users: c.users.map((u) => (u.name === "alice" ? { ...u, confirmNewDestinations: undefined } : u)),
    }));
    // a signature covering To/Cc proved the number the sender wrote: nothing to ask
    const proved = await mailFax("+15557770006", "Signed To", "google");
    expect((await rig.gw.store.getJob(proved))!.state).not.toBe("held");
    const unproved = await mailFax("+15557770007", "Unsigned To");
    expect((await rig.gw.store.getJob(unproved))!.state).toBe("held");
  }, 60_000);
});
