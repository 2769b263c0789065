// The operator's CLI in a child process: exit codes, help, config check masking, passwd.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { verifyPassword } from "../../src/auth/password.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
beforeAll(() => {
  dir = tempFolder("cli");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, text: string): string {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
}

describe("faxgate CLI", () => {
  it("--help lists every command of the contract", async () => {
    const r = await runCli(["--help"]);
    expect(r.code).toBe(0);
    for (const c of [
      "start",
      "emulator",
      "send",
      "jobs",
      "job",
      "retry",
      "cancel",
      "hold",
      "release",
      "status",
      "keys",
      "contacts",
      "history",
      "download",
      "config",
      "doctor",
      "passwd",
    ]) {
      expect(r.stdout).toMatch(new RegExp(`^\\s+${c}\\b`, "m"));
    }
  });

  it("config check prints the resolved config with secrets masked", async () => {
    const f = configFile(
      "ok.yaml",
      `api:\n  baseUrl: https://fax.example.test\n  adminKey: \${ADMIN_KEY}\nnotify:\n  from: fax@example.com\n  transport: smtps://relay:relaypass123@relay.example:465\nusers:\n  - name: alice\n    email: alice@example.com\n    apiKey: \${ALICE_KEY}\n`,
    );
    const r = await runCli(["config", "check", "--config", f], {
      env: { ADMIN_KEY: "admin-key-0000-secret", ALICE_KEY: "alice-key-1111-secret" },
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("alice@example.com");
    expect(r.stdout).toContain('apiKey: "****"');
    const all = r.stdout + r.stderr;
    for (const s of ["admin-key-0000-secret", "alice-key-1111-secret", "relaypass123"]) expect(all).not.toContain(s);
  });

  it("an invalid config names the key and exits 2", async () => {
    const f = configFile(
      "bad.yaml",
      `api:\n  baseUrl: http://insecure.example\nsmtp:\n  maxRecipients: lots\nusers: []\n`,
    );
    const r = await runCli(["config", "check", "--config", f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("api.baseUrl");
    expect(r.stderr).toContain("smtp.maxRecipients");
  });

  it("start refuses an invalid config before opening anything", async () => {
    const f = configFile("bad2.yaml", `data: ${dir}/d\nusers:\n  - name: x\n    email: x@example.com\n`);
    const r = await runCli(["start", "--config", f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("users[0].apiKey");
  });

  it("start with its SMTP port taken exits 2 naming smtp.listen (no crash, no stack)", async () => {
    const net = await import("node:net");
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const f = configFile(
        "busy.yaml",
        `api: {baseUrl: "https://127.0.0.1:9"}\ndata: ${dir}/busy\nsmtp: {listen: ["127.0.0.1:${port}"], domains: [fax.example.com]}\nusers:\n  - {name: a, email: a@example.com, apiKey: k}\n`,
      );
      const r = await runCli(["start", "--config", f]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/smtp\.listen 127\.0\.0\.1:\d+: listen EADDRINUSE/);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    } finally {
      blocker.close();
    }
  });

  it("a missing config file exits 2 and says which", async () => {
    const r = await runCli(["status", "--config", path.join(dir, "nope.yaml")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("nope.yaml");
  });

  it("passwd prints a scrypt hash that verifies, never the password", async () => {
    const r = await runCli(["passwd"], { input: "correct horse battery\n" });
    expect(r.code).toBe(0);
    const hash = r.stdout.trim();
    expect(hash).toMatch(/^scrypt\$/);
    expect(r.stdout + r.stderr).not.toContain("correct horse battery");
    expect(await verifyPassword("correct horse battery", hash)).toBe(true);
    expect(await verifyPassword("wrong horse battery", hash)).toBe(false);
  });

  it("job operations on an unknown id fail with exit 1 and say so", async () => {
    const f = configFile("q.yaml", `api: {baseUrl: sandbox}\ndata: ${dir}/q\nusers: []\n`);
    const r0 = await runCli(["jobs", "--json", "--config", f]);
    // the store does not exist yet: a clear message, not a stack trace
    expect(r0.code).toBe(1);
    expect(r0.stderr).toMatch(/no queue at/);
  });
});
