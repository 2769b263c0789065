// API calls per delivered fax with 1,000 faxes in flight, against the emulator over HTTPS.
// Every call the dispatcher makes (send, history pages, fax info, reconciliation) is counted.
// Alone: node --import tsx bench/dispatch-api-calls.bench.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Dispatcher } from "../src/dispatch/dispatcher.js";
import type { FaxApi } from "../src/fax/types.js";
import { silentLogger } from "../src/log/logger.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import { clientFor, closeClients } from "../test/helpers/client.js";
import { defaultConfig, testDispatchParts } from "../test/helpers/collaborators.js";
import { testLedger } from "../test/helpers/ledger.js";
import { startTestEmulator } from "../test/helpers/emulator.js";
import { EMU_KEY } from "../test/dispatch/emulator-facts.js";
import { TEST_PDF } from "../test/helpers/store.js";
import type { BenchResult } from "./types.js";

const FAXES = 1000;
/** Longer than sending all of them takes, so all are at the service at once. */
const DELAY_MS = 60_000;

function counting(api: FaxApi, count: { n: number }): FaxApi {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        count.n++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

export default async function bench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-"));
  // Long enough that every fax is still at the service when the last one is sent.
  const emu = await startTestEmulator({ delayMs: DELAY_MS });
  const store = SqliteStore.open({ dataDir: path.join(dir, "data") });
  try {
    const doc = path.join(dir, "doc.pdf");
    writeFileSync(doc, TEST_PDF);
    const t0 = Date.now();
    for (let i = 0; i < FAXES; i++) {
      await store.enqueue({
        source: "cli",
        user: "bench",
        cover: { enabled: false },
        // ...5: never one of the emulator's failing endings (0000-0003)
        recipients: [{ number: `+1555${String(3_000_000 + i * 10 + 5)}` }],
        documents: [{ path: doc, name: "doc.pdf", contentType: "application/pdf" }],
      });
    }
    if (process.env.BENCH_DEBUG) console.error(`enqueued ${FAXES} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const count = { n: 0 };
    const client = counting(clientFor(emu, EMU_KEY), count);
    const defaults = defaultConfig();
    const dispatcher = new Dispatcher({
      ...testDispatchParts(),
      store,
      ledger: testLedger(store),
      clientFor: () => client,
      logger: silentLogger(),
      api: { ...defaults.api, baseUrl: emu.baseUrl, concurrency: 16, ratePerSecond: 1000 },
      // the default queue settings: status polls every 10 s
      queue: defaults.queue,
    });
    let maxInFlight = 0;
    const started = Date.now();
    // The daemon's own loop: status polls run while the rest is still being sent.
    dispatcher.start();
    for (;;) {
      await new Promise((r) => setTimeout(r, 500));
      const c = await store.counts();
      maxInFlight = Math.max(maxInFlight, c.recipients.processing);
      if (process.env.BENCH_DEBUG)
        console.error(((Date.now() - started) / 1000).toFixed(1), JSON.stringify(c.recipients), count.n);
      if (c.jobs.queued + c.jobs.active === 0) break;
      if (Date.now() - started > 300_000) throw new Error("the bench did not finish in 5 minutes");
    }
    await dispatcher.stop();
    const elapsed = (Date.now() - started) / 1000;
    const delivered = (await store.counts()).recipients.delivered;
    const columnCalls = (await store.listJobs({ limit: FAXES }))
      .flatMap((j) => j.recipients)
      .reduce((a, r) => a + r.apiCalls, 0);
    return [
      {
        figure: `API calls per delivered fax (${FAXES} in flight, send included)`,
        value: count.n / delivered,
        unit: "calls",
        peer: { label: "send + one fax-info per fax", value: 2 },
        goal: "<= 1.5",
      },
      {
        figure: "API calls per delivered fax, from the per-recipient column",
        value: columnCalls / delivered,
        unit: "calls",
      },
      { figure: "faxes in flight at once (processing, peak)", value: maxInFlight, unit: "faxes", goal: `~${FAXES}` },
      {
        figure: `time to deliver ${FAXES} faxes (service delay ${DELAY_MS / 1000} s, polls every ${defaults.queue.pollInterval / 1000} s)`,
        value: elapsed,
        unit: "s",
      },
    ];
  } finally {
    store.close();
    await closeClients(emu);
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench())
    process.stdout.write(
      `${r.figure}: ${Number.isInteger(r.value) ? r.value : r.value.toFixed(3)} ${r.unit}${r.goal ? ` (goal ${r.goal})` : ""}\n`,
    );
}
