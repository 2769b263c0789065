// The connector delivery queue in its own process, for the crash test: the parent SIGKILLs it
// while a delivery is on the wire. Run: node --import tsx test/helpers/delivery-child.ts '<json>'
// It prints "READY" once the store is open, then runs one pass.
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { DeliveryQueue } from "../../src/connectors/queue.js";
import { silentLogger } from "../../src/log/logger.js";
import { systemClock } from "../../src/clock.js";
import { testLedger } from "./ledger.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as { dataDir: string; secretsFile: string };
const store = SqliteStore.open({ dataDir: spec.dataDir });
const queue = new DeliveryQueue({
  store,
  ledger: testLedger(store),
  secretsFile: () => spec.secretsFile,
  owner: "child-gateway",
  clock: systemClock,
  logger: silentLogger(),
  intervalMs: 3_600_000,
});
process.stdout.write("READY\n");
await queue.runOnce();
process.stdout.write("PASS-ENDED\n");
