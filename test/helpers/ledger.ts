// The ledger as the composition root builds it (parts/ledger.ts), for tests that build a door
// themselves: on the store's own database, with the tests' number key (vitest.config.ts env).
import { SqlLedger } from "../../src/ledger/ledger.js";
import type { QueueStore } from "../../src/store/queue-store.js";

export const testLedger = (store: Pick<QueueStore, "sql">): SqlLedger =>
  new SqlLedger(store.sql, Buffer.from(process.env.FAXGATE_LEDGER_KEY ?? "test-ledger-key-for-a-child-process-0000"));
