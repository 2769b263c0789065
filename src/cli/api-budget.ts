// A CLI command's calls to the fax service pass the same budget as the gateways' (issue 55): on
// PostgreSQL the account's shared slots, 429 window and history count (store/sql/fleet-budget.ts)
// as a visitor that does not join the fleet; on SQLite a gate of the command's own at
// api.ratePerSecond. Without it, `faxgate history` or a key rotation run beside a busy fleet
// added its calls on top of the account's rate, and a 429 it met slowed nobody down.
import type { Config } from "../config/schema.js";
import { ApiGate } from "../fax/api-gate.js";
import { silentLogger } from "../log/logger.js";
import type { QueueStore } from "../store/queue-store.js";
import { FleetBudget, liveFleetAccount } from "../store/sql/fleet-budget.js";

export interface CliBudget {
  gate: ApiGate;
  /** The fleet's budget when the store is PostgreSQL (tests read its counts). */
  fleet: FleetBudget | null;
  /** Writes what the command's calls met (a 429) for the fleet, then closes the store. */
  close(): Promise<void>;
}

export interface CliBudgetOptions {
  config: Config;
  /** The command's store, opened only when it is PostgreSQL (null: SQLite, the gate is its own). */
  openStore: () => Promise<QueueStore> | null;
  /** The account of the command's key from the service (/v1/me), when no gateway is alive to tell. */
  askAccount: () => Promise<string>;
}

export async function cliBudget(opts: CliBudgetOptions): Promise<CliBudget> {
  const { api } = opts.config;
  const store = await opts.openStore();
  const db = store?.fleetDb() ?? null;
  const fleet = db
    ? new FleetBudget({
        db,
        gateway: `cli-${process.pid}`,
        account: async () => (await liveFleetAccount(db)) ?? opts.askAccount(),
        ratePerSecond: api.ratePerSecond,
        dispatchShare: api.dispatchShare,
        concurrency: api.concurrency,
        historyPerMinute: api.historyPerMinute,
        logger: silentLogger(),
        visitor: true,
      })
    : null;
  const gate = new ApiGate({
    ...(fleet ? { fleet } : {}),
    ratePerSecond: api.ratePerSecond,
    concurrency: api.concurrency,
    dispatchShare: api.dispatchShare,
    historyPerMinute: api.historyPerMinute,
  });
  return {
    gate,
    fleet,
    async close() {
      await fleet?.stop();
      await store?.close();
    },
  };
}
