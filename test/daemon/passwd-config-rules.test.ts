// `faxgate passwd` with piped input hashes the first line only and refuses an empty one;
// `config check` refuses two users sharing a spool folder or an address, naming both.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyPassword } from "../../src/auth/password.js";
import { runCli } from "../helpers/cli.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
beforeAll(() => {
  dir = tempFolder("rules");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("passwd from a pipe", () => {
  it("hashes the first line only", async () => {
    const r = await runCli(["passwd"], { input: "first line secret\nsecond line\nthird\n" });
    expect(r.code).toBe(0);
    const hash = r.stdout.trim();
    expect(await verifyPassword("first line secret", hash)).toBe(true);
    expect(await verifyPassword("first line secret\nsecond line\nthird", hash)).toBe(false);
    expect(r.stdout + r.stderr).not.toContain("first line secret");
  });

  it("a first line with CRLF is taken without the CR", async () => {
    const r = await runCli(["passwd"], { input: "windows-typed-pass\r\n" });
    expect(r.code).toBe(0);
    expect(await verifyPassword("windows-typed-pass", r.stdout.trim())).toBe(true);
  });

  it("refuses an empty first line and empty input, printing no hash", async () => {
    for (const input of ["\nthe real password later\n", ""]) {
      const r = await runCli(["passwd"], { input });
      expect(r.code, JSON.stringify(input)).not.toBe(0);
      expect(r.stderr).toMatch(/no password on stdin: its first line is empty/);
      expect(r.stdout).not.toMatch(/scrypt\$/);
    }
  });
});

describe("config check: users that would share what must be theirs", () => {
  const base = `api: {baseUrl: "https://fax.example.test"}\nspool: {root: ${"${DIR}"}/spool}\n`;

  it("two users sharing one spool folder are refused, naming both", async () => {
    const f = path.join(dir, "shared-spool.yaml");
    writeFileSync(
      f,
      `${base.replace("${DIR}", dir)}users:\n  - {name: alice, email: alice@example.com, apiKey: k1, spool: office}\n  - {name: bob, email: bob@example.com, apiKey: k2, spool: Office}\n`,
    );
    const r = await runCli(["config", "check", "--config", f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /users\[1\]\.spool: spool folder "Office" of user "bob" is also the spool folder of user "alice"/,
    );
  });

  it("a user's spool folder named like another user's default folder is refused too", async () => {
    const f = path.join(dir, "shadow.yaml");
    writeFileSync(
      f,
      `${base.replace("${DIR}", dir)}users:\n  - {name: alice, email: alice@example.com, apiKey: k1}\n  - {name: mallory, email: m@example.com, apiKey: k2, spool: alice}\n`,
    );
    const r = await runCli(["config", "check", "--config", f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/spool folder "alice" of user "mallory" is also the spool folder of user "alice"/);
  });

  it("two users with the same alias are refused, naming both", async () => {
    const f = path.join(dir, "alias.yaml");
    writeFileSync(
      f,
      `${base.replace("${DIR}", dir)}users:\n  - {name: alice, email: alice@example.com, apiKey: k1, aliases: [desk@example.com]}\n  - {name: bob, email: bob@example.com, apiKey: k2, aliases: [Desk@example.com]}\n`,
    );
    const r = await runCli(["config", "check", "--config", f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Desk@example\.com also belongs to user "alice"/);
  });
});
