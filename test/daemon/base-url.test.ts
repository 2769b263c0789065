// A config file must say where faxes go: without api.baseUrl the daemon refuses to start (it
// used to run the embedded emulator, "delivering" faxes that never left the machine); with
// `baseUrl: sandbox` said explicitly it runs the emulator and says so loudly.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, spawnCli } from "../helpers/cli.js";
import { OutputWatch } from "../helpers/wait.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
beforeAll(() => {
  dir = tempFolder("baseurl");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("api.baseUrl with a config file", () => {
  it("start and config check refuse a config file with users and keys but no api.baseUrl, naming the key", async () => {
    const f = path.join(dir, "no-url.yaml");
    writeFileSync(
      f,
      `data: ${dir}/d1\nusers:\n  - {name: alice, email: alice@example.com, apiKey: real-looking-key}\n`,
    );
    for (const cmd of [["start"], ["config", "check"]]) {
      const r = await runCli([...cmd, "--config", f]);
      expect(r.code, cmd.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/api\.baseUrl: missing/);
    }
  });

  it("baseUrl: sandbox said explicitly runs the emulator with a loud banner", async () => {
    const f = path.join(dir, "sandbox.yaml");
    writeFileSync(
      f,
      `api: {baseUrl: sandbox}\ndata: ${dir}/d2\nsmtp: {listen: ["127.0.0.1:0"]}\nusers:\n  - {name: demo, email: demo@localhost, apiKey: demo-key}\n`,
    );
    const child = spawnCli(["start", "--config", f], { cwd: dir });
    const err = new OutputWatch(child.stderr!);
    try {
      await err.waitFor(/SANDBOX: api\.baseUrl is "sandbox" in .*sandbox\.yaml/, 60_000);
      await err.waitFor(/NEVER sent to a real fax line/);
    } finally {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      });
    }
  });
});
