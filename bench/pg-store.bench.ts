// The queue on PostgreSQL against SQLite, and two gateways against one, each a ratio measured in
// one run on this machine. A private PostgreSQL cluster with its durable defaults (fsync on, a
// commit is on disk, as SQLite's synchronous=FULL) is started for it.
// - accept rate: SMTP sessions delivering mail with a PDF, each 250 only once the job is committed;
// - API calls per delivered fax: the dispatcher against the emulator over HTTPS until every fax is
//   delivered (send, status polls, reconciliation all counted);
// - two gateways on one PostgreSQL queue against one: the same SMTP load split between two
//   listeners (both in this process, so they share its CPU), and two dispatchers sharing the work.
// Alone: node --import tsx bench/pg-store.bench.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { configSchema } from "../src/config/schema.js";
import { Dispatcher } from "../src/dispatch/dispatcher.js";
import type { FaxApi } from "../src/fax/types.js";
import { silentLogger } from "../src/log/logger.js";
import { PgStore } from "../src/store/postgres/pg-store.js";
import type { QueueStore } from "../src/store/queue-store.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import { ReaderPool } from "../src/intake/reader-pool.js";
import { clientFor, closeClients } from "../test/helpers/client.js";
import { testDispatchParts } from "../test/helpers/collaborators.js";
import { testLedger } from "../test/helpers/ledger.js";
import { startTestEmulator } from "../test/helpers/emulator.js";
import { EMU_KEY } from "../test/dispatch/emulator-facts.js";
import { pgAvailable, startPgCluster, type PgCluster } from "../test/helpers/pg-cluster.js";
import { TEST_PDF } from "../test/helpers/store.js";
import { runSmtpLoad } from "./lib/load.js";
import { benchUser, stubApi } from "./lib/stub-service.js";
import type { BenchResult } from "./types.js";
import { benchSmtpGateway } from "./lib/smtp-gateway.js";

const SESSIONS = 10;
const MESSAGES = 300;
const FAXES = 200;
const DOMAIN = "fax.example.com";
const USER = benchUser();

type Backend = "sqlite" | "postgres";

/** A store of `backend` in a temp folder (PostgreSQL: a fresh database); `more` opens another gateway's store on the same queue. */
async function openStores(
  backend: Backend,
  cluster: PgCluster | null,
  dir: string,
  count: number,
): Promise<QueueStore[]> {
  if (backend === "sqlite") return [SqliteStore.open({ dataDir: path.join(dir, "data") })];
  const url = await cluster!.createDatabase();
  const out: QueueStore[] = [];
  for (let i = 0; i < count; i++) out.push(await PgStore.open({ url, dataDir: path.join(dir, `data-${i}`) }));
  return out;
}

/** Messages a second accepted (250 after commit) by `gateways` listeners sharing the load. */
export async function acceptRate(backend: Backend, cluster: PgCluster | null, gateways: number): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-pg-"));
  const stores = await openStores(backend, cluster, dir, gateways);
  const readers = new ReaderPool();
  const smtp = {
    ...configSchema.parse({ smtp: { listen: ["127.0.0.1:0"], domains: [DOMAIN] } }).smtp!,
    maxMessagesPerMinute: 1_000_000,
    maxConnections: 100,
  };
  const servers = await Promise.all(
    stores.map((store, i) =>
      benchSmtpGateway({
        smtp,
        users: [USER],
        dataDir: path.join(dir, `smtp-${i}`),
        store,
        clientFor: () => stubApi,
        readers,
      }),
    ),
  );
  try {
    const ports = await Promise.all(servers.map(async (s) => (await s.listen())[0]!.port));
    const started = Date.now();
    const results = await Promise.all(
      ports.map((port) =>
        runSmtpLoad({ port, sessions: SESSIONS / gateways, messages: MESSAGES / gateways, from: USER.email }),
      ),
    );
    const seconds = (Date.now() - started) / 1000;
    const accepted = results.reduce((a, r) => a + r.accepted, 0);
    if (accepted !== MESSAGES) throw new Error(`${backend} x${gateways}: only ${accepted} of ${MESSAGES} accepted`);
    // the loads start together; the slower one decides (process start-up counted alike for all)
    return accepted / Math.max(...results.map((r) => r.seconds), seconds > 0 ? 0 : 1);
  } finally {
    for (const s of servers) await s.close({ timeoutMs: 1000 });
    await readers.close();
    for (const s of stores) await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** API calls per delivered fax with `dispatchers` gateways sending from one queue. */
export async function apiCallsPerFax(
  backend: Backend,
  cluster: PgCluster | null,
  dispatchers: number,
): Promise<{ perFax: number; seconds: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-pg-"));
  const emu = await startTestEmulator({ delayMs: 2000 });
  const stores = await openStores(backend, cluster, dir, dispatchers);
  const count = { n: 0 };
  const counting = (api: FaxApi): FaxApi =>
    new Proxy(api, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (typeof v !== "function") return v;
        return (...args: unknown[]) => {
          count.n++;
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  try {
    const doc = path.join(dir, "doc.pdf");
    writeFileSync(doc, TEST_PDF);
    for (let i = 0; i < FAXES; i++) {
      await stores[0]!.enqueue({
        source: "cli",
        user: "bench",
        cover: { enabled: false },
        recipients: [{ number: `+1555${String(3_100_000 + i * 10 + 5)}` }],
        documents: [{ path: doc, name: "doc.pdf", contentType: "application/pdf" }],
      });
    }
    const client = counting(clientFor(emu, EMU_KEY));
    const defaults = configSchema.parse({});
    const ds = stores.map(
      (store) =>
        new Dispatcher({
          ...testDispatchParts(),
          store,
          ledger: testLedger(store),
          clientFor: () => client,
          logger: silentLogger(),
          api: { ...defaults.api, baseUrl: emu.baseUrl, concurrency: 8, ratePerSecond: 1000 },
          queue: { ...defaults.queue, pollInterval: 2000 },
        }),
    );
    const started = Date.now();
    for (const d of ds) d.start();
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      const c = await stores[0]!.counts();
      if (c.jobs.queued + c.jobs.active === 0) break;
      if (Date.now() - started > 300_000) throw new Error("the bench did not finish in 5 minutes");
    }
    const seconds = (Date.now() - started) / 1000;
    for (const d of ds) await d.stop();
    const c = await stores[0]!.counts();
    const delivered = c.recipients.delivered;
    if (delivered < FAXES * 0.95)
      throw new Error(`${backend}: only ${delivered} of ${FAXES} delivered: ${JSON.stringify(c.recipients)}`);
    if (delivered !== FAXES)
      process.stderr.write(
        `bench: ${backend} x${dispatchers}: ${delivered} of ${FAXES} delivered (${JSON.stringify(c.recipients)})\n`,
      );
    return { perFax: count.n / delivered, seconds };
  } finally {
    for (const s of stores) await s.close();
    await closeClients(emu);
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function bench(): Promise<BenchResult[]> {
  const missing = pgAvailable();
  if (missing)
    return [{ figure: "PostgreSQL queue rows", value: 0, unit: "-", note: `PostgreSQL rows skipped: ${missing}` }];
  const cluster = await startPgCluster({ durable: true });
  try {
    // alternate the backends so that other work on the machine weighs on both alike
    const sqliteRate = await acceptRate("sqlite", null, 1);
    const pgRate = await acceptRate("postgres", cluster, 1);
    const pgTwo = await acceptRate("postgres", cluster, 2);
    const sqliteCalls = await apiCallsPerFax("sqlite", null, 1);
    const pgCalls = await apiCallsPerFax("postgres", cluster, 1);
    const pgTwoCalls = await apiCallsPerFax("postgres", cluster, 2);
    const load = `${SESSIONS} sessions, ${MESSAGES} mails with a PDF`;
    const note =
      "PostgreSQL rows: a private cluster on this machine with its durable defaults (fsync on); two gateways run in one process here, sharing its CPU";
    return [
      {
        figure: `pg: durable accept rate on PostgreSQL, ${load}`,
        value: pgRate,
        unit: "msg/s",
        peer: { label: "SQLite, same load, same run", value: sqliteRate },
        note,
      },
      {
        figure: `pg: accept rate, two gateways on one PostgreSQL queue (load split)`,
        value: pgTwo,
        unit: "msg/s",
        peer: { label: "one gateway on PostgreSQL", value: pgRate },
        note,
      },
      {
        figure: `pg: API calls per delivered fax on PostgreSQL (${FAXES} faxes)`,
        value: pgCalls.perFax,
        unit: "calls",
        peer: { label: "SQLite, same run", value: sqliteCalls.perFax },
      },
      {
        figure: `pg: API calls per delivered fax, two dispatchers on one PostgreSQL queue`,
        value: pgTwoCalls.perFax,
        unit: "calls",
        peer: { label: "one dispatcher on PostgreSQL", value: pgCalls.perFax },
      },
      {
        figure: `pg: time to deliver ${FAXES} faxes, two dispatchers`,
        value: pgTwoCalls.seconds,
        unit: "s",
        peer: { label: "one dispatcher on PostgreSQL", value: pgCalls.seconds },
      },
    ];
  } finally {
    cluster.destroy();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench())
    process.stdout.write(
      `${r.figure}: ${r.value.toFixed(3)} ${r.unit}${r.peer ? ` vs ${r.peer.value.toFixed(3)} (${r.peer.label}) ratio ${(r.value / r.peer.value).toFixed(2)}` : ""}\n`,
    );
}
