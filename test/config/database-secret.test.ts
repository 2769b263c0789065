// Secrets and keys that mislead, as the admin meets them: `faxgate config check` and `faxgate
// doctor` run as child processes against a private PostgreSQL whose role has a password with
// every character that breaks a URL (`@ / : # ? %`), and against the emulator over HTTPS.
// The password reaches PostgreSQL whole (from the secrets file into the URL, or as
// database.password); no piece of it is ever printed; a wrong password is blamed as a password
// and a closed port as the port.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { freePort } from "../helpers/net.js";
import { tempFolder } from "../tmp-dir.js";
import { usePgCluster } from "../helpers/store-backends.js";

type Check = { name: string; ok: boolean; detail: string; warn?: boolean };

const PASSWORD = "p@ss/w:rd#?%41x";
const ROLE = "fgsecret";
/** Every 3-character piece of the password: none may appear in anything printed. */
const PIECES = [...PASSWORD].map((_, i) => PASSWORD.slice(i, i + 3)).filter((p) => p.length === 3);
const noPieceOfPassword = (text: string) => {
  for (const p of [...PIECES, encodeURIComponent(PASSWORD).slice(0, 6)]) expect(text).not.toContain(p);
};

let dir: string;
let emu: TestEmulator;
let n = 0;

function setup(opts: { database?: string; users?: string; secrets?: string }): string {
  const root = path.join(dir, `c${++n}`);
  mkdirSync(path.join(root, "data"), { recursive: true });
  writeFileSync(path.join(root, "faxgate.secrets"), opts.secrets ?? `FAXGATE_DB_PASSWORD=${PASSWORD}\n`, {
    mode: 0o600,
  });
  const file = path.join(root, "faxgate.yaml");
  writeFileSync(
    file,
    [
      "api:",
      `  baseUrl: ${emu.baseUrl}`,
      `  caFile: ${emu.caFile}`,
      `data: ${path.join(root, "data")}`,
      "secretsFile: faxgate.secrets",
      "office:\n  soffice: false",
      opts.database ?? "",
      "users:",
      opts.users ?? `  - {name: alice, email: alice@example.com, apiKey: "${TEST_KEYS.aliceBase}"}`,
      "",
    ].join("\n"),
  );
  return file;
}

async function doctor(file: string): Promise<{ code: number; checks: Check[]; out: string }> {
  const r = await runCli(["doctor", "--json", "--config", file], { timeoutMs: 120_000 });
  return { code: r.code ?? -1, checks: JSON.parse(r.stdout) as Check[], out: `${r.stdout}${r.stderr}` };
}
const find = (checks: Check[], name: string): Check => {
  const c = checks.find((x) => x.name === name);
  expect(c, `a "${name}" check in ${JSON.stringify(checks.map((x) => x.name))}`).toBeDefined();
  return c!;
};

beforeAll(async () => {
  dir = tempFolder("dbsecret");
  emu = await startTestEmulator();
}, 60_000);
afterAll(async () => {
  await emu?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const postgres = usePgCluster("[test/config/database-secret] PostgreSQL part");

describe.skipIf(postgres.missing !== null)("a database password with @ / : # ? %", () => {
  let port: number;
  let db: string;
  beforeAll(async () => {
    port = postgres.cluster!.port;
    db = await postgres.cluster!.createPasswordRole(ROLE, PASSWORD);
  });

  const url = (password = "${FAXGATE_DB_PASSWORD}") => `postgres://${ROLE}:${password}@127.0.0.1:${port}/${db}`;

  it("from the secrets file into the URL: config check masks it whole, doctor connects", async () => {
    const file = setup({ database: `database: ${url()}` });
    const check = await runCli(["config", "check", "--config", file]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(`database: postgres://${ROLE}:****@127.0.0.1:${port}/${db}`);
    noPieceOfPassword(`${check.stdout}${check.stderr}`);
    const r = await doctor(file);
    const q = find(r.checks, "queue");
    expect(q.ok, q.detail).toBe(true);
    expect(q.detail).toContain(`PostgreSQL postgres://${ROLE}:***@127.0.0.1:${port}/${db}: 0 jobs`);
    noPieceOfPassword(r.out);
  }, 120_000);

  it("as database.password beside the URL: doctor connects, config check shows neither", async () => {
    const file = setup({
      database: `database:\n  url: postgres://${ROLE}@127.0.0.1:${port}/${db}\n  password: \${FAXGATE_DB_PASSWORD}`,
    });
    const check = await runCli(["config", "check", "--config", file]);
    expect(check.code, check.stderr).toBe(0);
    noPieceOfPassword(`${check.stdout}${check.stderr}`);
    const r = await doctor(file);
    expect(find(r.checks, "queue").ok, find(r.checks, "queue").detail).toBe(true);
    noPieceOfPassword(r.out);
  }, 120_000);

  it("a wrong password is blamed as the password, not the host and port", async () => {
    const file = setup({ database: `database: ${url()}`, secrets: `FAXGATE_DB_PASSWORD=${PASSWORD}-old/@#\n` });
    const r = await doctor(file);
    const q = find(r.checks, "queue");
    expect(q.ok).toBe(false);
    expect(q.detail).toMatch(/refused the password \(SQLSTATE 28P01\).*the host and port are fine/);
    expect(q.detail).not.toMatch(/check the host|check the port|nothing answers|nothing listens/);
    noPieceOfPassword(r.out);
  }, 120_000);

  it("a closed port is blamed as the port", async () => {
    const port = await freePort();
    const file = setup({ database: `database: postgres://${ROLE}:\${FAXGATE_DB_PASSWORD}@127.0.0.1:${port}/${db}` });
    const r = await doctor(file);
    const q = find(r.checks, "queue");
    expect(q.ok).toBe(false);
    expect(q.detail).toMatch(/nothing listens at that host and port: check the port in `database:`/);
    noPieceOfPassword(r.out);
  }, 120_000);

  it("the password written into the URL as it is: config check refuses, naming the fix, showing no piece of it", async () => {
    const file = setup({ database: `database: ${url(PASSWORD)}` });
    const check = await runCli(["config", "check", "--config", file]);
    expect(check.code).not.toBe(0);
    expect(check.stderr).toMatch(
      /database: .*must not be written into the URL as it is; give the password as database\.password/,
    );
    noPieceOfPassword(`${check.stdout}${check.stderr}`);
  }, 60_000);
});
