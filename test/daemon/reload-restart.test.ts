// A SIGHUP that changes a setting only a restart applies (webhooks:, a listener, a timer) says so:
// a RELOAD warning naming the settings in the log, and "RESTART NEEDED" in `faxgate status` until
// the next start. A reload of the same file, or of users only, says nothing of the kind.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restartNoteKey } from "../../src/config/restart-needed.js";
import { runCli } from "../helpers/cli.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { consoleGateway } from "../web/rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

let rig: TestGateway;

beforeAll(async () => {
  rig = await startGateway(consoleGateway());
}, 60_000);

afterAll(async () => {
  await rig?.stop();
});

const warnings = () => rig.logs.filter((l) => l.includes("RELOAD:"));

describe("a reload that changes restart-only settings", () => {
  it("logs the settings and leaves a note that faxgate status shows", async () => {
    await rig.reloadWith((c) => c);
    await rig.reloadWith((c) => ({ ...c, users: c.users.filter((u) => u.name !== "nopass") }));
    expect(warnings()).toEqual([]);
    expect(await rig.gw.store.getState(restartNoteKey())).toBe("");

    await rig.reloadWith((c) => ({
      ...c,
      webhooks: {
        listen: "127.0.0.1:0",
        url: "https://fax.example.com/hooks/fax",
        username: "svc",
        password: "a-long-webhook-secret",
        pollInterval: 300_000,
      },
      queue: { ...c.queue, pollInterval: 999 },
    }));
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toContain('"settings":["queue.pollInterval","webhooks"]');
    expect(warnings()[0]).toContain("only a restart applies them");
    // the secret of the new setting is not in the log
    expect(rig.logs.join("")).not.toContain("a-long-webhook-secret");

    const config = path.join(rig.dir, "status.yaml");
    writeFileSync(
      config,
      [
        `api: {baseUrl: "${rig.emu.baseUrl}", caFile: "${rig.emu.caFile}"}`,
        `data: ${path.join(rig.dir, "data")}`,
        "users:",
        `  - {name: alice, email: alice@example.com, apiKey: ${TEST_KEYS.alice}}`,
        "",
      ].join("\n"),
    );
    const status = await runCli(["status", "--config", config]);
    expect(status.stdout).toMatch(
      /^RESTART NEEDED: queue\.pollInterval, webhooks changed by a reload at .+; the daemon still runs with the old value until it is restarted$/m,
    );
    const json = await runCli(["status", "--json", "--config", config]);
    expect(JSON.parse(json.stdout).restartNeeded).toMatchObject({ settings: ["queue.pollInterval", "webhooks"] });
  }, 120_000);
});
