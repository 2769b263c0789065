// Every link faxgate mails, followed in a real browser (Debian's chromium via playwright-core) by
// the person it was mailed to, signed out first as a mail reader is: the receiver of a fax, a
// member of its group inbox, a user a rule names, a shared mailbox's reader, the owner of a sent
// fax and of a print waiting for a number, and the operator who gets the failure's admin copy.
// Each lands on the page where they can act; someone it was not mailed to gets nothing.
// FAXGATE_SCREENSHOTS=1 writes docs/images/console-received.png.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emulatorCall } from "../helpers/client.js";
import { hashPassword } from "../../src/auth/password.js";
import type { SeedData } from "../../src/emulator/emulator.js";
import { emulatorInbound, TEST_KEYS, TEST_SEED } from "../helpers/emulator.js";
import { TEST_PDF } from "../helpers/store.js";
import { pdfWithPages } from "../emulator/api.js";
import { waitUntil } from "../helpers/wait.js";
import { PASSWORDS, consoleGateway, outboxMails, outboxOf } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`mailed links browser test skipped: no chromium at ${CHROMIUM} (apt-get install chromium)`);
const SHOTS =
  process.env.FAXGATE_SCREENSHOTS === "1"
    ? path.resolve(__dirname, "../../docs/images")
    : path.join(os.tmpdir(), "faxgate-console-shots");

// bob's service user has a key for each gateway user who reads his faxes here: the daemon refuses
// two users with one key (a fax of one would be taken as the other's)
const BOB_KEYS = { carol: "bob-carol-key", desk: "bob-desk-key", dave: "bob-dave-key", ops: "bob-ops-key" } as const;
const SEED: SeedData = {
  ...TEST_SEED,
  users: TEST_SEED.users!.map((u) =>
    u.email === "bob@example.com"
      ? {
          ...u,
          keys: [
            ...(u.keys ?? []),
            ...Object.entries(BOB_KEYS).map(([who, token]) => ({
              name: `bob for ${who}`,
              access: "print_driver",
              token,
            })),
          ],
        }
      : u,
  ),
} as SeedData;

const MORE = { carol: "carol-web-secret-4", desk: "desk-web-secret-5", dave: "dave-web-secret-6" } as const;
const PW: Record<string, string> = { ...PASSWORDS, ...MORE };

let rig: TestGateway;
let browser: Browser;
let outbox: string;

const mails = () => outboxMails(outbox);
/** The console link of the one mail of `kind` to `to`, waited for. */
const linkIn = (kind: string, to: string, page: string) =>
  waitUntil(
    () => {
      const m = mails().find(
        (e) => e.includes(`X-Faxgate-Notification: ${kind}`) && new RegExp(`^To: ${to}$`, "mi").test(e),
      );
      // every page is mailed behind the link door (/m, web/mailed-link.ts)
      const linkKind = { "address.html": "address", "fax.html": "job", "inbound.html": "received" }[page];
      const shape = `m\\?k=${linkKind}&id=[A-Za-z0-9_-]+&t=\\d+`;
      return m ? (new RegExp(`(http://\\S+/${shape})`).exec(m)?.[1] ?? null) : null;
    },
    `the ${kind} mail to ${to}`,
    20_000,
  );

/** Where a mailed link leads: the link door (/m) sends a fax's link on to its page. */
function landing(link: string): string {
  const u = new URL(link);
  if (!u.pathname.endsWith("/m")) return link;
  const pages: Record<string, string> = { job: "fax.html", received: "inbound.html", address: "address.html" };
  const page = pages[u.searchParams.get("k") ?? ""];
  return new URL(`${page}?id=${u.searchParams.get("id")}`, u).href;
}

/** A fresh browser, signed out: the link, the sign-in it leads to, and back to the link's page. */
async function follow(link: string, user: string): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: 900, height: 1000 } });
  const page = await ctx.newPage();
  await page.goto(link);
  await page.waitForURL(/\/login\.html\?next=/);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password").fill(PW[user]!);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => u.href === landing(link));
  return page;
}

beforeAll(async () => {
  if (!hasChromium) return;
  const hash = async (p: string) => hashPassword(p);
  rig = await startGateway(
    consoleGateway({
      seed: SEED,
      outbox: true,
      config: {
        users: [
          { name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice, password: await hash(PW.alice!) },
          { name: "bob", email: "bob@example.com", apiKey: TEST_KEYS.bob, password: await hash(PW.bob!) },
          { name: "carol", email: "carol@example.com", apiKey: BOB_KEYS.carol, password: await hash(PW.carol!) },
          // the person who reads the front desk's shared mailbox signs in with that address
          { name: "desk", email: "frontdesk@example.com", apiKey: BOB_KEYS.desk, password: await hash(PW.desk!) },
          { name: "dave", email: "dave@example.com", apiKey: BOB_KEYS.dave, password: await hash(PW.dave!) },
          {
            name: "ops",
            email: "admin@example.com",
            // a key that sees only bob's faxes: alice's key is the one that receives
            apiKey: BOB_KEYS.ops,
            password: await hash(PW.ops!),
            role: "admin",
          },
        ],
        notify: {
          from: "faxgate@example.com",
          adminCopy: "admin@example.com",
          inbound: { enabled: true, interval: "1s", mailBacklog: true },
        },
        inbound: {
          groups: { referrals: { members: ["bob"] } },
          routes: [
            {
              name: "referrals line",
              match: { dialled: "+15550100201" },
              deliver: [
                { receiver: true },
                { inbox: "referrals" },
                { users: ["carol"] },
                { mail: "frontdesk@example.com" },
              ],
            },
          ],
        },
      },
    }),
  );
  outbox = outboxOf(rig);
  // bob's service user (whose key carol, desk, dave and ops share here) wants received faxes by
  // mail; the seed's "None" would leave a group member and a rule's user without a mail to follow
  await emulatorCall(rig.emu, "PATCH", "/_emulator/users/bob@example.com", { emailNotifyReceiveOption: "All" });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await rig?.stop();
});

describe.skipIf(!hasChromium)("every mailed link opens where its reader can act", () => {
  it("a received fax: receiver, group member, a rule's user and the shared mailbox each open its page", async () => {
    await emulatorInbound(
      rig.emu,
      { email: "alice@example.com", callerId: "+15557654321", csid: "DR SMITH CLINIC", to: "+15550100201" },
      await pdfWithPages(2),
      "referral.pdf",
    );

    const readers = [
      { user: "alice", to: "alice@example.com", acts: false },
      { user: "bob", to: "bob@example.com", acts: true },
      { user: "carol", to: "carol@example.com", acts: false },
      { user: "desk", to: "frontdesk@example.com", acts: false },
    ];
    let link = "";
    for (const r of readers) {
      link = await linkIn("inbound", r.to, "inbound.html");
      const page = await follow(link, r.user);
      // the same facts the mail gives, the route it took, the timeline and the document
      await page.getByRole("heading", { name: "Fax from +1 555-765-4321" }).waitFor();
      const facts = await page.locator("#facts").textContent();
      expect(facts).toContain("DR SMITH CLINIC");
      expect(facts).toMatch(/Number dialled\s*\+1 555-010-0201/);
      expect(facts).toMatch(/Pages\s*2 pages/);
      expect(facts).toContain("rule referrals line");
      await page.locator('#preview[data-rendered="2"]').waitFor();
      await page.locator("#timeline li", { hasText: "routed" }).waitFor();
      expect(await page.locator("#status").textContent()).toBe("");
      if (r.acts) {
        await page.getByRole("button", { name: "Take it" }).click();
        await page.locator("#state", { hasText: `taken by ${r.user}` }).waitFor();
        mkdirSync(SHOTS, { recursive: true });
        await page.screenshot({ path: path.join(SHOTS, "console-received.png") });
      } else expect(await page.locator("#inbox").isHidden()).toBe(true);
      await page.context().close();
    }

    // the log counts the fax each mail carried: the shared mailbox always gets it, from the store
    // (the notifier logs NOTIFIED after its store and ledger writes, so the line may follow the mail)
    const notified = (to: string) =>
      waitUntil(
        () => rig.logs.find((l) => l.includes('"NOTIFIED"') && l.includes(`"to":["${to}"]`)),
        `the NOTIFIED line for ${to}`,
      );
    const frontdesk = await notified("frontdesk@example.com");
    expect(frontdesk).toContain('"attachments":1');
    expect(frontdesk).toContain('"reports":0');
    expect(await notified("carol@example.com")).toContain('"attachments":0');

    // someone it was not mailed to, signed in, meets a fax that does not exist
    const page = await follow(link, "dave");
    await page.locator("#status", { hasText: "no received fax with this id" }).waitFor();
    expect(await page.locator("#facts").isHidden()).toBe(true);
    await page.context().close();
  }, 240_000);

  it("a sent fax's outcome: its owner and the operator with the admin copy open its page", async () => {
    const file = path.join(rig.dir, "no-tone.pdf");
    writeFileSync(file, TEST_PDF);
    const { job } = await rig.gw.store.enqueue({
      source: "smtp",
      user: "alice",
      recipients: [{ number: "+15550100002" }],
      documents: [{ path: file, name: "no-tone.pdf", contentType: "application/pdf" }],
      cover: { enabled: false },
      meta: { origin: { subject: "Lab results" } },
    });
    const link = await linkIn("outcome", "alice@example.com", "fax.html");
    expect(link).toContain(job.id);
    // the failure went to the operator too (notify.adminCopy, a Bcc)
    await waitUntil(
      () => rig.logs.some((l) => l.includes('"NOTIFIED"') && l.includes("admin@example.com")),
      "the NOTIFIED line of the operator's copy",
    );
    for (const user of ["alice", "ops"]) {
      const page = await follow(link, user);
      await page.getByRole("heading", { name: "Lab results" }).waitFor();
      await page.locator("#recipients", { hasText: "failed" }).waitFor();
      await page.getByRole("button", { name: "Resend" }).waitFor();
      await page.context().close();
    }
  });

  it("a print waiting for a number: its owner opens the page to give it", async () => {
    const file = path.join(rig.dir, "unaddressed.pdf");
    writeFileSync(file, TEST_PDF);
    const { job } = await rig.gw.store.enqueue({
      source: "spool",
      user: "alice",
      recipients: [],
      awaitingAddress: true,
      documents: [{ path: file, name: "unaddressed.pdf", contentType: "application/pdf" }],
      cover: { enabled: false },
      meta: { origin: { file: "unaddressed.pdf" } },
    });
    // as the print door queues it
    await rig.gw.store.enqueueNotification({
      kind: "address",
      user: "alice",
      jobId: job.id,
      dedupeKey: `address:${job.id}`,
      payload: { jobId: job.id },
    });
    const link = await linkIn("address", "alice@example.com", "address.html");
    const page = await follow(link, "alice");
    await page.getByRole("heading", { name: "Give the fax number" }).waitFor();
    await page.getByLabel("To: fax numbers or contact names, comma-separated").waitFor();
    await page.context().close();
  });
});
