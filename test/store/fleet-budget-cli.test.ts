// CLI commands spend the fleet's account budget (issue 55), on a real PostgreSQL against the
// emulator: a window a gateway's 429 closed holds `faxgate contacts list` too (the service sees no
// call of it until the window is over), and a 429 a command meets is written into the fleet's
// row (window closed, pace halved) for the gateways.
// Skips where PostgreSQL is not installed.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { Agent, request } from "undici";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/index.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { FleetBudget } from "../../src/store/sql/fleet-budget.js";
import { runCli } from "../helpers/cli.js";
import { waitUntil } from "../helpers/wait.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { tempFolder } from "../tmp-dir.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("CLI fleet budget tests");

/** The account's limit at the service, and the fleet's setting under it (docs/ha.md). */
const ACCOUNT_RATE = 4;
const FLEET_RATE = 3;

interface Bed {
  emu: TestEmulator;
  agent: Agent;
  store: PgStore;
  budget: FleetBudget;
  configFile: string;
  close(): Promise<void>;
}

/** The emulator at the account's limit, one gateway's budget (in this process) and a CLI config on one database. */
async function bed(): Promise<Bed> {
  const url = await postgres.database();
  const dir = tempFolder("fleet-cli");
  const emu = await startTestEmulator({ ratePerSecond: ACCOUNT_RATE });
  const agent = new Agent({ connect: { ca: emu.caPem } });
  const store = await PgStore.open({ url, dataDir: path.join(dir, "gw1") });
  const api = { ratePerSecond: FLEET_RATE, dispatchShare: 0.5, concurrency: 4, historyPerMinute: 8 };
  const budget = new FleetBudget({
    db: store.fleetDb()!,
    gateway: "gw1",
    account: async () => emu.accountId,
    ...api,
    logger: silentLogger(),
  });
  await budget.start();
  const configFile = path.join(dir, "faxgate.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      api: { baseUrl: emu.baseUrl, caFile: emu.caFile, ratePerSecond: FLEET_RATE },
      database: url,
      data: path.join(dir, "cli"),
      users: [{ name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice }],
    }),
  );
  return {
    emu,
    agent,
    store,
    budget,
    configFile,
    async close() {
      await budget.stop();
      await store.close();
      await agent.close();
      await emu.stop();
    },
  };
}

async function limits(b: Bed): Promise<Array<{ calls: number; peakPerSecond: number; refusedRate: number }>> {
  return Object.values(
    (await emulatorAdmin(b, "GET", "/_emulator/limits")) as Record<
      string,
      { calls: number; peakPerSecond: number; refusedRate: number }
    >,
  );
}

async function emulatorAdmin(b: Bed, method: "GET" | "PUT", p: string, body?: unknown): Promise<unknown> {
  const res = await request(`${b.emu.baseUrl}${p}`, {
    method,
    dispatcher: b.agent,
    headers: { authorization: `Basic ${b.emu.adminKey}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return res.body.json();
}

describe.skipIf(postgres.missing !== null)("CLI commands and the fleet's account budget on PostgreSQL", () => {
  it("a command waits while the fleet's window is closed by a gateway's 429, then calls", async () => {
    const b = await bed();
    try {
      // the gateway met a 429 with a long Retry-After: no call of the fleet before it ends
      const WINDOW_MS = 20_000;
      b.budget.rateLimited(WINDOW_MS);
      const closedAt = performance.now();
      await waitUntil(
        async () =>
          ((await b.store.fleetDb()!.get<{ c: number }>("SELECT closed_until AS c FROM fleet_budget"))?.c ?? 0) > 0,
        "the window closed in the store",
        10_000,
        50,
      );
      const run = runCli(["contacts", "list", "--json", "--config", b.configFile], { timeoutMs: 120_000 });
      // the command starts, learns the account from the gateway's row, and waits: the service sees
      // nothing until the window is over (a command outside the budget called within seconds)
      await new Promise((r) => setTimeout(r, Math.max(0, WINDOW_MS - 2000 - (performance.now() - closedAt))));
      expect((await limits(b))[0]?.calls ?? 0).toBe(0);
      const r = await run;
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).count).toBeGreaterThan(0);
      expect(performance.now() - closedAt).toBeGreaterThan(WINDOW_MS - 500);
      const after = await limits(b);
      process.stdout.write(`fleet-cli: service counted ${JSON.stringify(after)}\n`);
      expect(after[0]!.calls).toBeGreaterThan(0);
      expect(after[0]!.refusedRate).toBe(0);
    } finally {
      await b.close();
    }
  }, 180_000);

  it("a 429 a command meets closes the window and halves the pace for the whole fleet", async () => {
    const b = await bed();
    try {
      await emulatorAdmin(b, "PUT", "/_emulator/faults", { rateLimitRate: 1 });
      const r = await runCli(["contacts", "list", "--config", b.configFile], { timeoutMs: 60_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/429|rate/i);
      // written before the command ended: the window its Retry-After (1 s) closed, and the pace cut
      const row = await b.store
        .fleetDb()!
        .get<{ pace: number; window: number }>(
          "SELECT pace, closed_until - paced_at AS window FROM fleet_budget WHERE account = ?",
          [b.emu.accountId],
        );
      expect(row).toEqual({ pace: 0.5, window: 1000 });
    } finally {
      await b.close();
    }
  }, 120_000);
});
