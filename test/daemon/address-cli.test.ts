// A print waiting for its number, from the command line: `faxgate jobs` and `faxgate job` say
// "needs a number: give it in the console at <link>, or `faxgate address <job> <number>`" (not
// "held ... `faxgate release`", which release then refused), `faxgate release` refuses it with the
// same words, and `faxgate address` gives it the number through the console's checks (the
// destination policy refuses a premium-rate number by name; a good number queues it).
// FAXGATE_SCREENSHOTS=1 writes that output as docs/images/cli-waiting-print.png (a terminal drawn by
// Chromium).
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLocalStore } from "../../src/store/open.js";
import { runCli } from "../helpers/cli.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { TEST_PDF } from "../helpers/store.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
let emu: TestEmulator;
let config: string;
let jobId: string;
const CONSOLE = "https://fax.clinic.example";
const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";

/** The CLI's output as a terminal shows it, for docs/print.md (only with FAXGATE_SCREENSHOTS=1). */
async function picture(text: string): Promise<void> {
  if (process.env.FAXGATE_SCREENSHOTS !== "1" || !existsSync(CHROMIUM)) return;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1500, height: 200 } });
    await page.setContent(
      '<pre id="t" style="margin:0;padding:14px;background:#111;color:#eee;font:13px monospace;width:max-content"></pre>',
    );
    await page.locator("#t").evaluate((el, t) => {
      el.textContent = t;
    }, text.trimEnd());
    await page.locator("#t").screenshot({ path: path.resolve(__dirname, "../../docs/images/cli-waiting-print.png") });
  } finally {
    await browser.close();
  }
}

beforeAll(async () => {
  dir = tempFolder("address-cli");
  emu = await startTestEmulator({ delayMs: 100 });
  config = path.join(dir, "faxgate.yaml");
  writeFileSync(
    config,
    [
      `api: {baseUrl: "${emu.baseUrl}", caFile: "${emu.caFile}"}`,
      `data: ${dir}/data`,
      `web: {listen: "127.0.0.1:0", publicUrl: "${CONSOLE}"}`,
      "users:",
      `  - {name: alice, email: alice@example.com, apiKey: ${TEST_KEYS.alice}}`,
      "",
    ].join("\n"),
  );
  const store = openLocalStore({ dataDir: path.join(dir, "data") });
  const file = path.join(dir, "agreement.pdf");
  writeFileSync(file, TEST_PDF);
  const { job } = await store.enqueue({
    source: "spool",
    user: "alice",
    recipients: [],
    awaitingAddress: true,
    documents: [{ path: file, name: "agreement.pdf", contentType: "application/pdf" }],
    cover: { enabled: false, subject: "Signed agreement" },
    meta: { origin: { file: "agreement.pdf" } },
  });
  jobId = job.id;
  await store.close();
}, 60_000);

afterAll(async () => {
  await emu?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a print waiting for its number, from the CLI", () => {
  it("jobs, job and release say where to give the number; address gives it", async () => {
    const words = `needs a number: give it in the console at ${CONSOLE}/address.html?id=${jobId}, or \`faxgate address ${jobId} <number>\``;
    const jobs = await runCli(["jobs", "--config", config], { env: { TZ: "America/New_York" } });
    expect(jobs.code).toBe(0);
    expect(jobs.stdout).toContain(words);
    expect(jobs.stdout).not.toContain("faxgate release");
    // times in this machine's zone, as the other lines of the CLI
    expect(jobs.stdout).toMatch(/E[SD]T/);
    expect(jobs.stdout).not.toMatch(/\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d/);

    const one = await runCli(["job", jobId, "--config", config], { env: { TZ: "America/New_York" } });
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`state     ${words}`);
    expect(one.stdout).toMatch(/agreement\.pdf \(\d+ KB\)/);
    await picture(`$ faxgate jobs\n${jobs.stdout}\n$ faxgate job ${jobId}\n${one.stdout}`);

    const json = await runCli(["job", jobId, "--json", "--config", config]);
    expect(JSON.parse(json.stdout)).toMatchObject({ needsAddress: true, recipients: [{ waiting: words }] });

    const release = await runCli(["release", jobId, "--config", config]);
    expect(release.code).not.toBe(0);
    expect(release.stderr).toContain(`job ${jobId} ${words} (release does not apply)`);

    // the console's checks: a premium-rate number is refused by name, and nothing changes
    const premium = await runCli(["address", jobId, "+1 900 555 0199", "--config", config]);
    expect(premium.code).not.toBe(0);
    expect(premium.stderr).toMatch(/"\+1 900 555 0199": destination not allowed: .*premium-rate/);

    const given = await runCli(["address", jobId, "555 010 0123", "--config", config]);
    expect(given.stderr).toBe("");
    expect(given.code).toBe(0);
    expect(given.stdout).toBe(`${jobId}: queued, to +1 555-010-0123\n`);
    const after = await runCli(["job", jobId, "--json", "--config", config]);
    expect(JSON.parse(after.stdout)).toMatchObject({
      needsAddress: false,
      recipients: [{ number: "+15550100123", state: "queued" }],
    });
    const again = await runCli(["address", jobId, "555 010 0124", "--config", config]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`job ${jobId} is not waiting for a number`);
    // the number given is a ledger row by the account that ran the command, the number hashed
    const rows = await runCli(["audit", "export", "--object", `job:${jobId}`, "--config", config]);
    const addressed = rows.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { action: string; door: string; object: { id: string }; numberHash: string | null })
      .filter((r) => r.action === "addressed");
    expect(addressed.map((r) => [r.door, r.object.id])).toEqual([["cli", `${jobId}#0`]]);
    expect(addressed[0]!.numberHash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows.stdout).not.toContain("5550100123");
  }, 120_000);
});
