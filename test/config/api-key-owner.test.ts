// API keys that belong to someone else, as the admin meets them: `faxgate config check` refuses
// one key given to two users, naming both, and `faxgate doctor` asks the emulator (over HTTPS,
// GET /v1/me) whose each key is: another configured user's e-mail fails, an e-mail of no one
// configured warns.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { tempFolder } from "../tmp-dir.js";

type Check = { name: string; ok: boolean; detail: string; warn?: boolean };

let dir: string;
let emu: TestEmulator;
let n = 0;

function setup(users: string[]): string {
  const root = path.join(dir, `c${++n}`);
  mkdirSync(path.join(root, "data"), { recursive: true });
  const file = path.join(root, "faxgate.yaml");
  writeFileSync(
    file,
    [
      "api:",
      `  baseUrl: ${emu.baseUrl}`,
      `  caFile: ${emu.caFile}`,
      `data: ${path.join(root, "data")}`,
      "office:\n  soffice: false",
      "users:",
      ...users,
      "",
    ].join("\n"),
  );
  return file;
}

const find = (checks: Check[], name: string): Check => {
  const c = checks.find((x) => x.name === name);
  expect(c, `a "${name}" check in ${JSON.stringify(checks.map((x) => x.name))}`).toBeDefined();
  return c!;
};

beforeAll(async () => {
  dir = tempFolder("keyowner");
  emu = await startTestEmulator();
}, 60_000);
afterAll(async () => {
  await emu?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("API keys that belong to someone else", () => {
  it("config check refuses one key given to two users, naming both", async () => {
    const file = setup([
      `  - {name: alice, email: alice@example.com, apiKey: "${TEST_KEYS.alice}"}`,
      `  - {name: bob, email: bob@example.com, apiKey: "${TEST_KEYS.alice}"}`,
    ]);
    const check = await runCli(["config", "check", "--config", file]);
    expect(check.code).not.toBe(0);
    expect(check.stderr).toMatch(/users\[1\]\.apiKey: users "alice" and "bob" have the same API key/);
    expect(`${check.stdout}${check.stderr}`).not.toContain(TEST_KEYS.alice);
  }, 60_000);

  it("doctor fails a key whose owner (GET /v1/me at the emulator) is another user's e-mail", async () => {
    const file = setup([
      `  - {name: alice, email: alice@example.com, apiKey: "${TEST_KEYS.bob}"}`,
      `  - {name: bob, email: bob@example.com, apiKey: "${TEST_KEYS.aliceBase}"}`,
      `  - {name: carol, email: carol@example.com, apiKey: "${TEST_KEYS.admin}"}`,
    ]);
    const run = await runCli(["doctor", "--json", "--config", file], { timeoutMs: 120_000 });
    const r = { code: run.code, checks: JSON.parse(run.stdout) as Check[] };
    expect(r.code).toBe(1);
    const a = find(r.checks, "api key of alice");
    expect(a.ok).toBe(false);
    expect(a.detail).toMatch(/belongs to bob@example\.com, user "bob"'s e-mail, not alice@example\.com/);
    expect(find(r.checks, "api key of bob").detail).toMatch(/belongs to alice@example\.com, user "alice"'s e-mail/);
    // the e-mail of no one configured here: a warning, the service may know carol by another
    const c = find(r.checks, "api key of carol");
    expect(c).toMatchObject({ ok: true, warn: true });
    expect(c.detail).toMatch(/belongs to admin@example\.com, not carol@example\.com/);
  }, 120_000);
});
