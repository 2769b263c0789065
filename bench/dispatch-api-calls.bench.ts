// API calls per delivered fax with 1,000 faxes in flight, against the emulator over HTTPS.
// Every call the dispatcher makes (send, history pages, fax info, reconciliation) is counted.
// Alone: node --import tsx bench/dispatch-api-calls.bench.ts
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configSchema } from '../src/config/schema.js';
import { Dispatcher } from '../src/dispatch/dispatcher.js';
import type { FaxApi } from '../src/fax/types.js';
import { silentLogger } from '../src/log/logger.js';
import { Store } from '../src/store/store.js';
import { clientFor, closeClients } from '../test/helpers/client.js';
import { startTestEmulator } from '../test/helpers/emulator.js';
import { EMU_KEY } from '../test/dispatch/emulator-facts.js';
import type { BenchResult } from './types.js';

const FAXES = 1000;

function counting(api: FaxApi, count: { n: number }): FaxApi {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        count.n++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

export default async function bench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'faxgate-'));
  // Long enough that every fax is still at the service when the last one is sent.
  const emu = await startTestEmulator({ delayMs: 8000 });
  const store = Store.open({ dataDir: path.join(dir, 'data') });
  try {
    const doc = path.join(dir, 'doc.pdf');
    writeFileSync(doc, '%PDF-1.4\n% bench\n%%EOF\n');
    for (let i = 0; i < FAXES; i++) {
      await store.enqueue({
        source: 'cli', user: 'bench', cover: { enabled: false },
        recipients: [{ number: `+1555${String(2_000_000 + i)}` }],
        documents: [{ path: doc, name: 'doc.pdf', contentType: 'application/pdf' }],
      });
    }
    const count = { n: 0 };
    const client = counting(clientFor(emu, EMU_KEY), count);
    const defaults = configSchema.parse({});
    const dispatcher = new Dispatcher({
      store, clientFor: () => client, logger: silentLogger(),
      api: { ...defaults.api, baseUrl: emu.baseUrl, concurrency: 16, ratePerSecond: 1000 },
      queue: { ...defaults.queue, pollIntervalMs: 1000 },
    });
    let maxInFlight = 0;
    const started = Date.now();
    for (;;) {
      await dispatcher.runOnce();
      const c = store.counts();
      maxInFlight = Math.max(maxInFlight, c.recipients.processing);
      if (c.jobs.queued + c.jobs.active === 0) break;
      if (Date.now() - started > 300_000) throw new Error('the bench did not finish in 5 minutes');
      await new Promise((r) => setTimeout(r, 1000));
    }
    const elapsed = (Date.now() - started) / 1000;
    const delivered = store.counts().recipients.delivered;
    const columnCalls = store.listJobs({ limit: FAXES }).flatMap((j) => j.recipients).reduce((a, r) => a + (r.apiCalls ?? 0), 0);
    return [
      { figure: `API calls per delivered fax (${FAXES} in flight, send included)`, value: count.n / delivered, unit: 'calls', peer: { label: 'send + one fax-info per fax', value: 2 }, goal: '<= 1.5' },
      { figure: 'API calls per delivered fax, from the per-recipient column', value: columnCalls / delivered, unit: 'calls' },
      { figure: 'faxes in flight at once (processing, peak)', value: maxInFlight, unit: 'faxes', goal: `~${FAXES}` },
      { figure: `time to deliver ${FAXES} faxes (service delay 8 s)`, value: elapsed, unit: 's' },
    ];
  } finally {
    store.close();
    await closeClients(emu);
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench()) process.stdout.write(`${r.figure}: ${Number.isInteger(r.value) ? r.value : r.value.toFixed(3)} ${r.unit}${r.goal ? ` (goal ${r.goal})` : ''}\n`);
}
