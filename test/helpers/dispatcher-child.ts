// A dispatcher in its own process, for crash tests: the parent SIGKILLs it mid-run.
// Run: node --import tsx test/helpers/dispatcher-child.ts '<json ChildSpec>'
// It prints "READY" once started and "IDLE" whenever a pass leaves nothing queued or in flight.
import { readFileSync } from "node:fs";
import { configSchema } from "../../src/config/schema.js";
import { createFaxAgent, FaxClient } from "../../src/fax/client.js";
import pino from "pino";
import { createLogger, silentLogger } from "../../src/log/logger.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { testDispatcher } from "./collaborators.js";

export interface ChildSpec {
  dataDir: string;
  baseUrl: string;
  caFile: string;
  /** config user name -> API key */
  keys: Record<string, string>;
  queue?: Record<string, unknown>;
  api?: Record<string, unknown>;
  /** write pino JSON logs to stderr at this level (default silent) */
  logLevel?: string;
}

const spec = JSON.parse(process.argv[2] ?? "{}") as ChildSpec;
const config = configSchema.parse({ api: { baseUrl: spec.baseUrl, ...spec.api }, queue: spec.queue ?? {} });
const logger = spec.logLevel
  ? createLogger({ level: spec.logLevel, format: "json", destination: pino.destination(2) })
  : silentLogger();
const store = SqliteStore.open({ dataDir: spec.dataDir, logger });
const agent = createFaxAgent({ ca: readFileSync(spec.caFile, "utf8"), timeoutMs: config.api.timeoutMs });
const clients = new Map<string, FaxClient>();
const clientFor = (user: string): FaxClient => {
  let c = clients.get(user);
  if (!c) {
    c = new FaxClient({
      baseUrl: spec.baseUrl,
      apiKey: spec.keys[user]!,
      dispatcher: agent,
      timeoutMs: config.api.timeoutMs,
    });
    clients.set(user, c);
  }
  return c;
};
const dispatcher = testDispatcher({
  store,
  clientFor,
  api: config.api,
  queue: config.queue,
  logger,
});
dispatcher.start();
process.stdout.write("READY\n");
setInterval(async () => {
  const c = await store.counts();
  if (c.jobs.queued + c.jobs.active === 0) process.stdout.write("IDLE\n");
}, 200);
process.on("SIGTERM", () => {
  void dispatcher.stop({ timeoutMs: 2000 }).then(() => {
    store.close();
    process.exit(0);
  });
});
