// Search in the console against a whole gateway with OCR on: scanned-looking faxes arrive at the
// emulator, the gateway's own poller keeps and routes them, the OCR duty reads them (ocrmypdf in
// bubblewrap), and GET /api/search answers each person with the faxes they may see, ranked, with
// the matching line; every search is a ledger row without its words. Then once in Chromium, with
// a screenshot of the results.
import { existsSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { ledgerRows } from "../../src/store/sql/ledger.js";
import { getReceivedText } from "../../src/store/sql/received-text.js";
import { emulatorInbound } from "../helpers/emulator.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { scannedFax } from "../helpers/scanned-fax.js";
import { waitUntil } from "../helpers/wait.js";
import { PASSWORDS, consoleGateway, signIn } from "./rig.js";

const HAVE_OCR = findExecutable("ocrmypdf") !== null && findExecutable("gs") !== null;
const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
if (!HAVE_OCR) console.warn("console search test skipped: ocrmypdf or ghostscript is absent");
if (!existsSync(CHROMIUM)) console.warn(`console search in Chromium skipped: no chromium at ${CHROMIUM}`);
const SHOTS =
  process.env.FAXGATE_SCREENSHOTS === "1"
    ? path.resolve(__dirname, "../../docs/images")
    : path.join(os.tmpdir(), "faxgate-console-shots");

let rig: TestGateway;
const ids: Record<string, string> = {};

async function arrive(email: string, to: string, csid: string, lines: string[], seed: number): Promise<string> {
  const pdf = await scannedFax(lines, { seed });
  return emulatorInbound(rig.emu, { email, callerId: "+15557654321", csid, to }, pdf, "scan.pdf");
}

beforeAll(async () => {
  if (!HAVE_OCR) return;
  const outbox = path.join(os.tmpdir(), `faxgate-search-outbox-${process.pid}`);
  rig = await startGateway(
    consoleGateway({
      config: {
        notify: {
          from: "faxgate@example.com",
          transport: `outbox:${outbox}`,
          inbound: { enabled: true, interval: "1s", mailBacklog: true },
        },
        inbound: {
          // ops holds the account's admin key, which reads every user's faxes too: the court's
          // notice is bob's all the same, as the service's record names him (docs/inbound.md)
          groups: { referrals: { members: ["alice"] } },
          routes: [{ name: "referrals line", match: { dialled: "+15550100201" }, deliver: [{ inbox: "referrals" }] }],
        },
        ocr: { enabled: true },
      },
    }),
  );
  const arrived = {
    referral: await arrive(
      "alice@example.com",
      "+15550100201",
      "DR SMITH CLINIC",
      ["REFERRAL", "Patient: Maria Alvarez", "Alvarez to see cardiology"],
      1,
    ),
    notice: await arrive(
      "bob@example.com",
      "+15550100300",
      "COUNTY COURT",
      ["Notice in matter 2026-114", "Alvarez"],
      2,
    ),
    lab: await arrive("alice@example.com", "+15550100201", "ACME LAB", ["Lab results", "Glucose normal"], 3),
  };
  for (const [name, messageId] of Object.entries(arrived)) {
    ids[name] = await waitUntil(
      async () => {
        const [fax] = await rig.gw.store.listReceived({ messageId });
        const text = fax ? await getReceivedText(rig.gw.store.sql, fax.id) : null;
        return text && text.state !== "pending" && text.state !== "running" ? fax!.id : null;
      },
      `the text of the ${name} fax`,
      180_000,
      250,
    );
  }
}, 300_000);

afterAll(async () => {
  await rig?.stop();
});

async function search(user: keyof typeof PASSWORDS, query: string) {
  const s = await signIn(rig.url("web"), user, PASSWORDS[user]);
  const r = await fetch(`${rig.url("web")}/api/search?${query}`, { headers: { cookie: s.cookie } });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

type Result = { id: string; line: string | null; matched: string[] };

describe.skipIf(!HAVE_OCR)("search in the console", () => {
  it("finds the words OCR read, among the faxes each person may see, ranked, with the line", async () => {
    // every fax was routed before its text was known: the timeline says routed, then text read
    const events = await rig.gw.store.listReceivedEvents(ids.referral!);
    // (held for the look for a reply code first, then routed by the rules: it carried none)
    expect(events.map((e) => e.action)).toEqual(["stored", "routed", "routed", "text read"]);

    const alice = await search("alice", "q=alvarez");
    expect(alice.status).toBe(200);
    // alice: her group's inbox (the referral); bob's notice is not hers
    expect((alice.body.results as Result[]).map((r) => r.id)).toEqual([ids.referral]);
    expect((alice.body.results as Result[])[0]!.line).toBe("Patient: Maria Alvarez");

    const ops = await search("ops", "q=alvarez");
    // the operator sees both; the referral, saying it twice, first
    expect((ops.body.results as Result[]).map((r) => r.id)).toEqual([ids.referral, ids.notice]);

    expect((await rig.gw.store.getReceived(ids.notice!))!.user).toBe("bob");
    const bob = await search("bob", "q=matter+2026-114");
    expect((bob.body.results as Result[]).map((r) => r.id)).toEqual([ids.notice]);
    expect((await search("bob", "q=glucose")).body.results).toEqual([]);

    // the CSID, by words; a state and a range that leave nothing
    expect(((await search("alice", "q=acme+lab")).body.results as Result[]).map((r) => r.id)).toEqual([ids.lab]);
    expect((await search("ops", "q=alvarez&state=done")).body.results).toEqual([]);
    expect((await search("ops", "q=alvarez&until=2000-01-01")).body.results).toEqual([]);

    const bad = await search("alice", "q=x&state=lost");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("state must be one of");
    expect((await search("alice", "")).body.error).toContain("give words to look for");

    // each search a ledger row: who, how many words and results, which faxes; never the words
    const rows = (await ledgerRows(rig.gw.store.sql, {})).filter((r) => r.action === "searched");
    expect(rows.length).toBeGreaterThanOrEqual(7);
    const first = rows[0]!;
    expect(first).toMatchObject({ actor_kind: "person", actor_id: "alice", door: "console" });
    expect(JSON.parse(first.detail)).toMatchObject({ words: 1, results: 1, shown: ids.referral });
    expect(rows.map((r) => r.detail).join(" ")).not.toMatch(/alvarez|glucose|2026/i);
  });

  it.skipIf(!existsSync(CHROMIUM))(
    "shows the results page in Chromium",
    async () => {
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      try {
        const page = await (await browser.newContext({ viewport: { width: 1100, height: 700 } })).newPage();
        await page.goto(`${rig.url("web")}/login.html`);
        await page.getByLabel("User name").fill("ops");
        await page.getByLabel("Password").fill(PASSWORDS.ops);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: "My faxes" }).waitFor();
        await page.getByRole("link", { name: "Search" }).click();
        await page.getByRole("heading", { name: "Search faxes" }).waitFor();
        await page.getByLabel("Words or number").fill("Alvarez");
        await page.getByRole("button", { name: "Search" }).click();
        await page.locator("#status", { hasText: "2 faxes found" }).waitFor();
        const rows = page.locator("#results tbody tr");
        expect(await rows.count()).toBe(2);
        expect(await rows.first().locator("blockquote").textContent()).toMatch(/Alvarez/);
        mkdirSync(SHOTS, { recursive: true });
        await page.screenshot({ path: path.join(SHOTS, "console-search.png"), fullPage: true });
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
