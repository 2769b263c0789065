// Rows only a whole daemon writes, driven as an operator does: a SIGHUP and `faxgate reload` each
// make a config-reloaded row (the daemon's, by the gateway; the command's, by the account that ran
// it, through the cli door), and a reload of a broken config is a row too (applied false). Read
// back with `faxgate audit export`, as a compliance officer would.
import { rmSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { kill, makeRig, startDaemon, type Rig } from "../faults/harness.js";

let rig: Rig;
beforeAll(async () => {
  rig = await makeRig();
}, 60_000);
afterAll(async () => {
  await rig.agent.close();
  await rig.emu.stop();
  rmSync(rig.dir, { recursive: true, force: true });
});

const reloads = async () => {
  const out = await runCli(["audit", "export", "--format", "jsonl", "--config", rig.configFile], { cwd: rig.dir });
  expect(out.code, out.stderr).toBe(0);
  return out.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { action: string; actor: { kind: string }; door: string; detail: object })
    .filter((r) => r.action === "config-reloaded")
    .map((r) => [r.actor.kind, r.door, r.detail]);
};

describe("config reloads in the ledger", () => {
  it("a SIGHUP, `faxgate reload` and a refused reload are each a row", async () => {
    const daemon = await startDaemon(rig);
    try {
      daemon.child.kill("SIGHUP");
      await daemon.out.waitFor(/"msg":"RELOADED users"/);
      const r = await runCli(["reload", "--config", rig.configFile], { cwd: rig.dir });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/told the running daemon \(pid \d+\) to reload/);
      await expect.poll(reloads, { timeout: 20_000 }).toHaveLength(3);
      // a config that no longer parses: refused, the running one kept, and said in the ledger
      const good = JSON.stringify(rig.raw);
      writeFileSync(rig.configFile, "users: [not: valid: yaml");
      daemon.child.kill("SIGHUP");
      await daemon.out.waitFor(/RELOAD refused/);
      writeFileSync(rig.configFile, good);
      await expect.poll(reloads, { timeout: 20_000 }).toHaveLength(4);
      expect(await reloads()).toEqual([
        ["gateway", "gateway", { applied: true, restartNeeded: 0 }],
        ["operator", "cli", { asked: "SIGHUP" }],
        ["gateway", "gateway", { applied: true, restartNeeded: 0 }],
        ["gateway", "gateway", { applied: false }],
      ]);
      expect(daemon.child.exitCode).toBeNull();
    } finally {
      await kill(daemon, "SIGTERM");
    }
    // no daemon: the command says so and fails
    const none = await runCli(["reload", "--config", rig.configFile], { cwd: rig.dir });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no running faxgate daemon/);
  }, 120_000);
});
