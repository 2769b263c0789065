// docs/ha.md's "Moving an SQLite queue to PostgreSQL", run as pasted in a root shell against a
// private PostgreSQL that asks for passwords (scram-sha-256): its createuser/createdb lines (the
// server's address given by PGHOST/PGPORT, as Debian's default socket is not ours), then both
// migration lines, the password once from the secrets file and once from PGPASSWORD. A wrong
// password is refused, so the lines cannot pass without the password reaching the server.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { BUILT_CLI_ENTRY, haveBuiltSources } from "../helpers/built-sources.js";
import { runCli } from "../helpers/cli.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const pgBin = "/usr/lib/postgresql/15/bin";
const why =
  process.getuid?.() !== 0
    ? "not root (runuser)"
    : spawnSync("id", ["-u", "postgres"]).status !== 0
      ? "no postgres user"
      : spawnSync(path.join(pgBin, "initdb"), ["--version"]).status !== 0
        ? "PostgreSQL 15 is not installed"
        : !haveBuiltSources()
          ? "no built CLI"
          : null;

/** The lines of the sh blocks of one section of docs/ha.md. */
function docLines(section: string): string[] {
  const doc = readFileSync(path.join(repo, "docs/ha.md"), "utf8");
  const part = doc.slice(doc.indexOf(section), doc.indexOf("\n## ", doc.indexOf(section) + 1));
  return [...part.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split("\n").filter(Boolean));
}

describe.skipIf(why !== null)("docs/ha.md: moving an SQLite queue to PostgreSQL, as pasted", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-ha-doc-"));
  const user = `fgha${process.pid}`;
  let port = 0;
  afterAll(() => {
    spawnSync("runuser", [
      "-u",
      "postgres",
      "--",
      path.join(pgBin, "pg_ctl"),
      "-D",
      path.join(dir, "pg"),
      "-m",
      "immediate",
      "stop",
    ]);
    spawnSync("userdel", [user]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates the role and database, and migrates with the password from the secrets file or PGPASSWORD", async () => {
    chmodSync(dir, 0o755);
    const pgDir = path.join(dir, "pg");
    const sock = path.join(dir, "sock");
    const pgUid = Number(execFileSync("id", ["-u", "postgres"]).toString());
    for (const d of [pgDir, sock]) {
      mkdirSync(d);
      chownSync(d, pgUid, pgUid);
    }
    writeFileSync(path.join(dir, "pw"), "superuser-secret\n");
    chownSync(path.join(dir, "pw"), pgUid, pgUid);
    const asPg = (args: string[]) => execFileSync("runuser", ["-u", "postgres", "--", ...args], { stdio: "pipe" });
    asPg([
      path.join(pgBin, "initdb"),
      "-D",
      pgDir,
      "-A",
      "scram-sha-256",
      `--pwfile=${path.join(dir, "pw")}`,
      "-U",
      "postgres",
      "--no-sync",
    ]);
    port = await new Promise<number>((r) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => r(p));
      });
    });
    asPg([
      path.join(pgBin, "pg_ctl"),
      "-D",
      pgDir,
      "-l",
      path.join(sock, "pg.log"),
      "-w",
      "-o",
      `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1`,
      "start",
    ]);

    // the test suite's log and mail copies are root's files, which the gateway's user cannot write
    const { FAXGATE_LOG_COPY: _l, FAXGATE_MAIL_COPY: _m, ...base } = process.env;
    const bash = (line: string, env: Record<string, string>, input = "") =>
      spawnSync("bash", ["-c", line], { input, encoding: "utf8", env: { ...base, ...env }, timeout: 120_000 });
    // the role and the database, the superuser's password standing in for Debian's peer sign-in
    const [createuser, createdb] = docLines("## Moving an SQLite queue to PostgreSQL").filter((l) =>
      l.startsWith("runuser -u postgres"),
    );
    expect(createuser).toBe("runuser -u postgres -- createuser --pwprompt faxgate");
    const pgEnv = { PGHOST: sock, PGPORT: String(port), PGPASSWORD: "superuser-secret" };
    expect(bash(createuser!, pgEnv, "role-secret-1\nrole-secret-1\n").status).toBe(0);
    expect(bash(createdb!, pgEnv).status).toBe(0);
    expect(bash(createdb!.replace(/faxgate$/, "faxgate2"), pgEnv).status).toBe(0);

    // a gateway's SQLite queue with one job, its user playing faxgate, `faxgate` on the PATH
    execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user]);
    const data = path.join(dir, "data");
    mkdirSync(data);
    const bin = path.join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "faxgate"), `#!/bin/sh\nexec ${process.execPath} ${BUILT_CLI_ENTRY} "$@"\n`, {
      mode: 0o755,
    });
    const config = path.join(dir, "faxgate.yaml");
    const secrets = path.join(dir, "faxgate.env");
    writeFileSync(secrets, "ALICE_FAX_KEY=k\nFAXGATE_DB_PASSWORD=role-secret-1\n", { mode: 0o640 });
    chownSync(secrets, 0, Number(execFileSync("id", ["-g", user]).toString()));
    const yaml = (database: string) =>
      `secretsFile: ${secrets}\napi:\n  baseUrl: sandbox\ndata: ${data}\n${database}users:\n  - name: alice\n    email: alice@example.com\n    apiKey: "\${ALICE_FAX_KEY}"\n`;
    writeFileSync(config, yaml(""));
    expect((await runCli(["send", "--config", config, "--to", "+15551234567", "--notes", "ha"])).code).toBe(0);
    execFileSync("chown", ["-R", user, data]);

    const gw = (line: string) =>
      line
        .replaceAll("/etc/faxgate/faxgate.yaml", config)
        .replace("-u faxgate ", `-u ${user} `)
        .replace("db.example.com", `127.0.0.1:${port}`);
    const env = { PATH: `${bin}:${process.env.PATH}` };
    const lines = docLines("## Moving an SQLite queue to PostgreSQL");
    // 1. database: in the config, its password from the secrets file
    writeFileSync(config, yaml(`database: postgres://faxgate:\${FAXGATE_DB_PASSWORD}@127.0.0.1:${port}/faxgate\n`));
    const viaConfig = lines.find((l) => l.startsWith("runuser -u faxgate") && !l.includes("--to"))!;
    const one = bash(gw(viaConfig), env);
    expect(one.status, `${one.stderr}${one.stdout}`).toBe(0);
    expect(one.stdout).toMatch(/copied: 1 jobs/);
    // 2. --to, the password read into PGPASSWORD (typed at the prompt; here on stdin)
    writeFileSync(config, yaml(""));
    const read = lines.find((l) => l.startsWith("read -rsp"))!;
    const viaTo = gw(lines.find((l) => l.includes("--to"))!)
      .replace("/faxgate\n", "/faxgate2\n")
      .replace(/\/faxgate$/, "/faxgate2");
    const two = bash(`${read}\n${viaTo}`, env, "role-secret-1\n");
    expect(two.status, two.stderr).toBe(0);
    expect(two.stdout).toMatch(
      /verified: every row of the SQLite queue is in postgres:\/\/faxgate@127\.0\.0\.1:\d+\/faxgate2/,
    );
    // the same line with a wrong password is refused: the password really travels
    const wrong = bash(`${read}\n${viaTo}`, env, "not-the-password\n");
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toMatch(/password authentication failed for user "faxgate"/);
  }, 240_000);
});
