// `faxgate send` refuses a number the destination policy refuses, with the reason, and queues nothing.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
beforeAll(() => {
  dir = tempFolder("send-policy");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("faxgate send and the destination policy", () => {
  it("refuses a premium-rate number and a user-denied one, naming the rule", async () => {
    const f = path.join(dir, "c.yaml");
    writeFileSync(
      f,
      `api: {baseUrl: sandbox}\ndata: ${dir}/data\nusers:\n  - {name: alice, email: alice@example.com, apiKey: k, destinations: {rules: [{action: deny, country: GB}]}}\n`,
    );
    const premium = await runCli(["send", "--config", f, "--to", "+1 900 555 0199", "--cover", "--subject", "hi"]);
    expect(premium.code).not.toBe(0);
    expect(premium.stderr).toMatch(
      /--to \+1 900 555 0199: destination not allowed: \+19005550199 is a premium-rate number.*"premium-rate"/,
    );
    const gb = await runCli(["send", "--config", f, "--to", "+44 20 7946 0000", "--cover", "--subject", "hi"]);
    expect(gb.code).not.toBe(0);
    expect(gb.stderr).toMatch(/users\[alice\]\.destinations\.rules\[0\] \(deny country GB\)/);
    // refused before the queue is touched
    expect(existsSync(path.join(dir, "data", "faxgate.db"))).toBe(false);
  });
});
