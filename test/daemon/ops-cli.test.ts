// The admin's day one with the CLI, in child processes against a real emulator over HTTPS:
// usage errors exit 2 with the reason, secrets come from the config's secretsFile (all missing
// ones named at once, needed only by the commands that use them), `keys rotate --write` writes
// where the key lives and never leaves an orphan key, and `doctor` says what is really wrong.
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { spawnSync } from "node:child_process";
import Database from "better-sqlite3";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliArgv, runCli } from "../helpers/cli.js";
import { verifyPassword } from "../../src/auth/password.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { FaxClient, createFaxAgent } from "../../src/fax/client.js";
import { keyFingerprint } from "../../src/keys/key-overrides.js";
import { DaemonLock } from "../../src/store/daemon-lock.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
let emu: TestEmulator;
let n = 0;

beforeAll(async () => {
  dir = tempFolder("ops");
  emu = await startTestEmulator();
}, 60_000);
afterAll(async () => {
  await emu?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A config folder with faxgate.yaml (and faxgate.env when given), against the emulator. */
function setup(
  opts: { yaml?: string; env?: string; adminKey?: string; aliceKey?: string; extra?: string; caFile?: boolean } = {},
): { file: string; data: string; envFile: string } {
  const root = path.join(dir, `c${++n}`);
  mkdirSync(root);
  const data = path.join(root, "data");
  const envFile = path.join(root, "faxgate.env");
  if (opts.env !== undefined) {
    writeFileSync(envFile, opts.env);
    chmodSync(envFile, 0o640);
  }
  const yaml =
    opts.yaml ??
    [
      "api:",
      `  baseUrl: ${emu.baseUrl}`,
      opts.caFile === false ? "" : `  caFile: ${emu.caFile}`,
      `  adminKey: "${opts.adminKey ?? "${FAXGATE_ADMIN_KEY}"}"`,
      `data: ${data}`,
      opts.env !== undefined ? `secretsFile: faxgate.env` : "",
      opts.extra ?? "",
      // doctor converts a page with LibreOffice when it is on: seconds each run, and these tests
      // are not about it (test/daemon/doctor-checks.test.ts is)
      opts.extra?.includes("office:") ? "" : "office:\n  soffice: false",
      "users:",
      "  - name: alice",
      "    email: alice@example.com",
      `    apiKey: "${opts.aliceKey ?? "${ALICE_FAX_KEY}"}"`,
      "",
    ].join("\n");
  const file = path.join(root, "faxgate.yaml");
  writeFileSync(file, yaml);
  return { file, data, envFile };
}

async function aliceKeys(): Promise<string[]> {
  const agent = createFaxAgent({ caFile: emu.caFile, timeoutMs: 10_000 });
  try {
    const admin = new FaxClient({
      baseUrl: emu.baseUrl,
      apiKey: TEST_KEYS.admin,
      dispatcher: agent,
      timeoutMs: 10_000,
    });
    const alice = await new FaxClient({
      baseUrl: emu.baseUrl,
      apiKey: TEST_KEYS.aliceBase,
      dispatcher: agent,
      timeoutMs: 10_000,
    }).me();
    return (await admin.listApiKeys(alice.userId)).map((k) => k.uuid).sort();
  } finally {
    await agent.close();
  }
}

describe("usage errors exit 2 and say why", () => {
  const cases: Array<[string[], RegExp]> = [
    [["jobs", "--bogus"], /unknown option '--bogus'/],
    [["job"], /missing required argument 'id'/],
    [["history", "--status", "x"], /Allowed choices are all, success, failed, processing/],
    [["jobs", "--limit", "abc"], /--limit.*expected a whole number/],
    [["jobs", "--limit", "1.5"], /--limit.*expected a whole number/],
    [["keys", "create", "--expires", "tomorrow"], /--expires.*ISO 8601/],
    [["jobs", "--state", "nope"], /Allowed choices are .*deferred/],
  ];
  for (const [args, why] of cases) {
    it(`faxgate ${args.join(" ")}`, async () => {
      const r = await runCli(args, { cwd: dir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(why);
      expect(r.stderr).not.toMatch(/at .*\.ts:\d+/);
    });
  }

  it("jobs --state takes every documented recipient state, and job counts tries as the mail does", async () => {
    const c = setup({ env: "" });
    const store = SqliteStore.open({ dataDir: c.data });
    try {
      const { job } = await store.enqueue({
        source: "cli",
        user: "alice",
        recipients: [{ number: "+15551230003" }],
        documents: [],
        cover: { enabled: true, subject: "s" },
        meta: {},
      });
      for (const s of ["deferred", "queued"]) {
        const r = await runCli(["jobs", "--state", s, "--json", "--config", c.file]);
        expect(r.code, r.stderr).toBe(0);
        expect((JSON.parse(r.stdout) as unknown[]).length).toBe(s === "queued" ? 1 : 0);
      }
      // the service's faxAttempt 2 after one send of ours: the mail says "Attempts: 2", so does job
      const db = new Database(path.join(c.data, "faxgate.db"));
      db.prepare("UPDATE recipients SET attempts = 1, fax_attempt = 2 WHERE job_id = ?").run(job.id);
      db.close();
      const shown = await runCli(["job", job.id, "--config", c.file]);
      expect(shown.stdout).toMatch(/tries 2/);
    } finally {
      store.close();
    }
  }, 180_000);
});

describe("secrets file", () => {
  it("feeds ${VAR} in the config for config check and doctor; the environment is not needed", async () => {
    const c = setup({
      env: `# faxgate secrets\nFAXGATE_ADMIN_KEY=${TEST_KEYS.admin}\nexport ALICE_FAX_KEY="${TEST_KEYS.alice}"\n`,
    });
    const check = await runCli(["config", "check", "--config", c.file]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout + check.stderr).not.toContain(TEST_KEYS.alice);
    const doc = await runCli(["doctor", "--config", c.file], { timeoutMs: 60_000 });
    expect(doc.stdout).toMatch(/ok\s+api key of alice: works/);
    expect(doc.stdout).toMatch(/ok\s+admin key \(api\.adminKey\): works/);
  }, 90_000);

  it("names every unset variable at once, and only commands that use a secret need it", async () => {
    const c = setup({ env: "# nothing yet\n" });
    const check = await runCli(["config", "check", "--config", c.file]);
    expect(check.code).toBe(2);
    expect(check.stderr).toMatch(/FAXGATE_ADMIN_KEY \(api\.adminKey\), ALICE_FAX_KEY \(users\[0\]\.apiKey\)/);
    expect(check.stderr).toContain(c.envFile);
    SqliteStore.open({ dataDir: c.data }).close();
    const jobs = await runCli(["jobs", "--config", c.file]);
    expect(jobs.code, jobs.stderr).toBe(0);
    const keys = await runCli(["keys", "list", "--config", c.file]);
    expect(keys.code).toBe(2);
    expect(keys.stderr).toMatch(/`faxgate keys list` needs FAXGATE_ADMIN_KEY \(api\.adminKey\), which is not set/);
    const doc = await runCli(["doctor", "--config", c.file], { timeoutMs: 60_000 });
    expect(doc.code).toBe(1);
    expect(doc.stdout).toMatch(
      /FAIL\s+secrets: not set: FAXGATE_ADMIN_KEY \(api\.adminKey\), ALICE_FAX_KEY \(users\[0\]\.apiKey\)/,
    );
  }, 90_000);

  it("start refuses, naming every unset variable", async () => {
    const c = setup({ env: "" });
    const r = await runCli(["start", "--config", c.file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/FAXGATE_ADMIN_KEY \(api\.adminKey\), ALICE_FAX_KEY/);
  });
});

describe("keys rotate --write", () => {
  it("writes a ${VAR} key into the secrets file, and deletes the old key", async () => {
    // a key of alice's own to rotate, so the seeded ones stay for the other tests
    const agent = createFaxAgent({ caFile: emu.caFile, timeoutMs: 10_000 });
    const admin = new FaxClient({
      baseUrl: emu.baseUrl,
      apiKey: TEST_KEYS.admin,
      dispatcher: agent,
      timeoutMs: 10_000,
    });
    const me = await new FaxClient({
      baseUrl: emu.baseUrl,
      apiKey: TEST_KEYS.aliceBase,
      dispatcher: agent,
      timeoutMs: 10_000,
    }).me();
    const start = await admin.createApiKey({ name: "to rotate", userId: me.userId, access: "print_driver" });
    await agent.close();
    const c = setup({ env: `FAXGATE_ADMIN_KEY=${TEST_KEYS.admin}\nALICE_FAX_KEY=${start.token}\nOTHER=1\n` });
    const before = await aliceKeys();
    const r = await runCli(
      ["keys", "rotate", "--write", "--user", "alice", "--grace-seconds", "0", "--config", c.file],
      { timeoutMs: 60_000 },
    );
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(c.envFile, "utf8");
    const token = /^ALICE_FAX_KEY=(.+)$/m.exec(text)![1]!;
    expect(token).not.toBe(start.token);
    expect(text).toContain("OTHER=1");
    expect(r.stdout).toContain(`deleted the old key ${start.uuid}`);
    const after = await aliceKeys();
    expect(after.length).toBe(before.length);
    expect(after).not.toContain(start.uuid);
    expect(r.stdout + r.stderr).not.toContain(token);
  }, 90_000);

  it("refuses a key it cannot write before creating one: no orphan at the service", async () => {
    const c = setup({ adminKey: TEST_KEYS.admin });
    const before = await aliceKeys();
    const r = await runCli(["keys", "rotate", "--write", "--user", "alice", "--config", c.file], {
      env: { ALICE_FAX_KEY: TEST_KEYS.alice },
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/users\[0\]\.apiKey is \$\{ALICE_FAX_KEY\}.*No key was created/);
    expect(await aliceKeys()).toEqual(before);
  }, 60_000);

  it("refuses in the sandbox (no config file to write) before creating a key", async () => {
    const r = await runCli(["keys", "rotate", "--write"], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/sandbox has no config file/);
  });
});

describe("doctor", () => {
  it("labels a wrong admin key as the admin key, and a rotated key from keys.json works", async () => {
    // alice's config key is gone, replaced by the daemon (keys.json); the admin key is wrong
    const c = setup({ adminKey: "not-a-real-admin-key", aliceKey: "old-alice-key-gone" });
    mkdirSync(c.data, { recursive: true });
    writeFileSync(
      path.join(c.data, "keys.json"),
      JSON.stringify({
        alice: {
          apiKey: TEST_KEYS.alice,
          replaces: keyFingerprint("old-alice-key-gone"),
          keyId: "k",
          rotatedAt: new Date().toISOString(),
        },
      }),
    );
    const r = await runCli(["doctor", "--config", c.file], { timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/FAIL\s+admin key \(api\.adminKey\): .*401/);
    expect(r.stdout).toMatch(/ok\s+api key of alice: works \(the key the daemon rotated to, from keys\.json\)/);
  }, 60_000);

  it("checks the queue: a SQLite queue not made yet, then its jobs; a PostgreSQL one it cannot reach fails, its password masked", async () => {
    const c = setup({ adminKey: TEST_KEYS.admin, aliceKey: TEST_KEYS.alice });
    const first = await runCli(["doctor", "--config", c.file], { timeoutMs: 60_000 });
    expect(first.stdout).toMatch(/ok\s+queue: SQLite \S+faxgate\.db not created yet/);
    const store = SqliteStore.open({ dataDir: c.data });
    await store.enqueue({
      source: "cli",
      user: "alice",
      recipients: [{ number: "+15551230001" }],
      documents: [],
      cover: { enabled: true },
    });
    await store.close();
    const second = await runCli(["doctor", "--config", c.file], { timeoutMs: 60_000 });
    expect(second.stdout).toMatch(/ok\s+queue: SQLite \S+faxgate\.db: 1 jobs \(1 queued, 0 being sent, 0 held\)/);
    expect(second.code, second.stdout).toBe(0);

    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const pgPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const pg = setup({
      adminKey: TEST_KEYS.admin,
      aliceKey: TEST_KEYS.alice,
      extra: `database: postgres://faxgate:doctor-pg-secret@127.0.0.1:${pgPort}/faxgate`,
    });
    const r = await runCli(["doctor", "--config", pg.file], { timeoutMs: 60_000 });
    expect(r.stdout).toMatch(
      new RegExp(`FAIL\\s+queue: PostgreSQL postgres://faxgate:\\*+@127\\.0\\.0\\.1:${pgPort}/faxgate: .*ECONNREFUSED`),
    );
    expect(r.stdout + r.stderr).not.toContain("doctor-pg-secret");
    expect(r.code).toBe(1);
  }, 60_000);

  it("points at api.caFile for an untrusted certificate", async () => {
    const c = setup({ adminKey: TEST_KEYS.admin, aliceKey: TEST_KEYS.alice, caFile: false });
    const r = await runCli(["doctor", "--config", c.file], { timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/set api\.caFile to its CA certificate/);
  }, 60_000);

  it("fails an unreachable mail relay, and passes ports held by our own running daemon", async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const relayPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const held = net.createServer();
    await new Promise<void>((r) => held.listen(0, "127.0.0.1", r));
    const port = (held.address() as net.AddressInfo).port;
    const c = setup({
      adminKey: TEST_KEYS.admin,
      aliceKey: TEST_KEYS.alice,
      extra: `notify:\n  from: fax@example.com\n  transport: smtp://127.0.0.1:${relayPort}\nsmtp:\n  listen: ["127.0.0.1:${port}"]\n  domains: [fax.example.com]`,
    });
    mkdirSync(c.data, { recursive: true });
    const lock = DaemonLock.acquire(c.data); // this test process plays the running daemon
    writeFileSync(path.join(c.data, "faxgate.pid"), `${process.pid}\n`);
    try {
      const r = await runCli(["doctor", "--config", c.file], { timeoutMs: 60_000 });
      expect(r.stdout).toMatch(
        new RegExp(`ok\\s+listen 127\\.0\\.0\\.1:${port}: in use by the running faxgate \\(pid ${process.pid}\\)`),
      );
      // refused, or (when another test of the run took the freed port) no greeting: a FAIL either way
      expect(r.stdout).toMatch(
        /FAIL\s+notify relay: smtp:\/\/127\.0\.0\.1:\d+: .*(ECONNREFUSED|Greeting never received)/,
      );
      expect(r.code).toBe(1);
    } finally {
      lock.release();
      await new Promise((r) => held.close(r));
    }
  }, 60_000);
});

/** Runs `faxgate passwd` on a pseudo-terminal (python3's pty), answering each prompt. */
const PTY_DRIVER = `
import os, pty, sys, time
answers = sys.argv[1].split('\\n')
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
buf = b''
def read_until(marker):
    global buf
    end = time.time() + 60
    while marker not in buf:
        if time.time() > end:
            sys.stderr.write('timeout waiting for %r in %r' % (marker, buf)); sys.exit(9)
        try:
            buf += os.read(fd, 1024)
        except OSError:
            return
read_until(b'Password: ')
os.write(fd, answers[0].encode() + b'\\r')
read_until(b'Again: ')
os.write(fd, answers[1].encode() + b'\\r')
while True:
    try:
        d = os.read(fd, 1024)
    except OSError:
        break
    if not d:
        break
    buf += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(buf.decode(errors='replace'))
sys.exit(os.WEXITSTATUS(st))
`;

describe("passwd at a terminal", () => {
  const hasPython = spawnSync("python3", ["-c", "import pty"]).status === 0;
  if (!hasPython) console.warn("passwd terminal test skipped: python3 (for its pty module) is not installed");
  it.skipIf(!hasPython)(
    "asks twice and refuses two different passwords; --config is accepted",
    async () => {
      const run = (a: string, b: string) =>
        spawnSync(
          "python3",
          ["-c", PTY_DRIVER, `${a}\n${b}`, process.execPath, ...cliArgv(), "passwd", "--config", "/nonexistent.yaml"],
          { encoding: "utf8", timeout: 90_000 },
        );
      const differ = run("correct horse 1", "correct horse 2");
      expect(differ.status, differ.stdout + differ.stderr).toBe(2);
      expect(differ.stdout).toMatch(/the two passwords differ/);
      expect(differ.stdout).not.toMatch(/scrypt\$/);
      const same = run("correct horse 1", "correct horse 1");
      expect(same.status, same.stdout + same.stderr).toBe(0);
      const hash = /(scrypt\$\S+)/.exec(same.stdout)![1]!;
      expect(await verifyPassword("correct horse 1", hash)).toBe(true);
    },
    120_000,
  );
});
