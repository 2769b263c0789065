// What the compliance ledger costs intake (issue 56): the durable accept rate (SMTP sessions
// delivering mail with a PDF, each 250 only once the job is committed and its ledger rows
// appended) with the real ledger against the same gateway with a ledger that records nothing, on
// SQLite and on a private PostgreSQL cluster with its durable defaults. Goal: the rate without
// the ledger at most 1.05 times the rate with it. Rounds alternate with and without, so other
// work on the machine weighs on both alike; the median round is reported.
// Alone: node --import tsx bench/ledger-append.bench.ts
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { configSchema } from "../src/config/schema.js";
import { ReaderPool } from "../src/intake/reader-pool.js";
import { PgStore } from "../src/store/postgres/pg-store.js";
import type { QueueStore } from "../src/store/queue-store.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import { pgAvailable, startPgCluster, type PgCluster } from "../test/helpers/pg-cluster.js";
import { runSmtpLoad } from "./lib/load.js";
import { benchSmtpGateway } from "./lib/smtp-gateway.js";
import { benchUser, stubApi } from "./lib/stub-service.js";
import type { BenchResult } from "./types.js";

const SESSIONS = 10;
/** FAXGATE_BENCH_MESSAGES and FAXGATE_BENCH_ROUNDS override (a short trial run) */
const MESSAGES = Number(process.env.FAXGATE_BENCH_MESSAGES) || 300;
const ROUNDS = Number(process.env.FAXGATE_BENCH_ROUNDS) || 3;
/** FAXGATE_BENCH_LEDGER_STORE=sqlite|postgres measures one store only */
const ONLY = process.env.FAXGATE_BENCH_LEDGER_STORE;
const DOMAIN = "fax.example.com";
const USER = benchUser();

type Backend = "sqlite" | "postgres";

async function openStore(backend: Backend, cluster: PgCluster | null, dir: string): Promise<QueueStore> {
  if (backend === "sqlite") return SqliteStore.open({ dataDir: path.join(dir, "data"), threadsNow: true });
  return PgStore.open({ url: await cluster!.createDatabase(), dataDir: path.join(dir, "data") });
}

/** Messages a second accepted by one gateway, with the ledger or without. */
async function acceptRate(backend: Backend, cluster: PgCluster | null, ledger: boolean): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-ledger-"));
  const store = await openStore(backend, cluster, dir);
  const readers = new ReaderPool();
  const smtp = {
    ...configSchema.parse({ smtp: { listen: ["127.0.0.1:0"], domains: [DOMAIN] } }).smtp!,
    maxMessagesPerMinute: 1_000_000,
    maxConnections: 100,
  };
  const server = await benchSmtpGateway({
    smtp,
    users: [USER],
    dataDir: path.join(dir, "smtp"),
    store,
    clientFor: () => stubApi,
    readers,
    ledger,
  });
  try {
    const port = (await server.listen())[0]!.port;
    const r = await runSmtpLoad({ port, sessions: SESSIONS, messages: MESSAGES, from: USER.email });
    if (r.accepted !== MESSAGES) throw new Error(`${backend}: only ${r.accepted} of ${MESSAGES} accepted`);
    if (ledger) {
      // PostgreSQL's rows may still wait to be sealed (store/sql/ledger.ts): counted as they stand
      const rows = await store.sql.get<{ n: number | string }>(
        "SELECT (SELECT COUNT(*) FROM ledger) + (SELECT COUNT(*) FROM ledger_pending) AS n",
      );
      const jobs = await store.sql.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM jobs");
      if (Number(rows?.n) < Number(jobs?.n)) throw new Error(`${backend}: ${rows?.n} ledger rows for ${jobs?.n} jobs`);
    }
    return r.accepted / r.seconds;
  } finally {
    await server.close({ timeoutMs: 1000 });
    await readers.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function rounds(
  backend: Backend,
  cluster: PgCluster | null,
): Promise<{ with: number; without: number; pairs: string }> {
  const withLedger: number[] = [];
  const without: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    // alternate which goes first, so a warming machine favours neither
    if (i % 2 === 0) {
      without.push(await acceptRate(backend, cluster, false));
      withLedger.push(await acceptRate(backend, cluster, true));
    } else {
      withLedger.push(await acceptRate(backend, cluster, true));
      without.push(await acceptRate(backend, cluster, false));
    }
  }
  // each round's pair, so the spread under load shows beside the medians
  const pairs = without.map((w, i) => `${w.toFixed(1)}/${withLedger[i]!.toFixed(1)}`).join(", ");
  return { with: median(withLedger), without: median(without), pairs };
}

export default async function bench(): Promise<BenchResult[]> {
  const load = `${SESSIONS} sessions, ${MESSAGES} mails with a PDF, median of ${ROUNDS}`;
  const out: BenchResult[] = [];
  const row = (backend: string, r: { with: number; without: number; pairs: string }, note?: string): BenchResult => ({
    figure: `ledger: accept rate without the ledger / with it, ${backend}, ${load}`,
    value: r.without / r.with,
    unit: "x",
    goal: "<= 1.05",
    note: `${backend}: ${r.without.toFixed(1)} msg/s without, ${r.with.toFixed(1)} msg/s with the ledger (rounds without/with: ${r.pairs})${note ? `; ${note}` : ""}`,
  });
  if (ONLY !== "postgres") out.push(row("SQLite", await rounds("sqlite", null)));
  if (ONLY === "sqlite") return out;
  const missing = pgAvailable();
  if (missing) {
    out.push({ figure: "ledger: PostgreSQL row", value: 0, unit: "-", note: `skipped: ${missing}` });
    return out;
  }
  const cluster = await startPgCluster({ durable: true });
  try {
    out.push(row("PostgreSQL", await rounds("postgres", cluster), "a private cluster, fsync on"));
  } finally {
    cluster.destroy();
  }
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench()) process.stdout.write(`${r.figure}: ${r.value.toFixed(3)} ${r.unit} (${r.note})\n`);
}
