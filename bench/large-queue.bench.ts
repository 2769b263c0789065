// Claims in a large queue (issue 55): 1,000,000 finished jobs and 50,000 waiting, on SQLite and on
// PostgreSQL (a private cluster with its durable defaults). The rows are written by the database
// itself (test/helpers/large-queue.ts), then the dispatcher's claim (store.claimDue, 10 jobs a
// claim, as a pass asks) is timed again and again while the waiting rows last; the figure is its
// p99, against the same claims with no finished job. Smaller runs: FAXGATE_BENCH_FINISHED=100000 FAXGATE_BENCH_WAITING=5000.
// Issue 54: with FAXGATE_BENCH_BUSY=n, also a pass (claimDue) with n more waiting to one number at
// its limit, older than the rest: once while the others are claimed, then idle (nothing else due).
// Only this part: FAXGATE_BENCH_ONLY=busy.
// Alone: node --import tsx bench/large-queue.bench.ts
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PgStore } from "../src/store/postgres/pg-store.js";
import type { QueueStore } from "../src/store/queue-store.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import {
  addBusyPostgres,
  addBusySqlite,
  fillPostgres,
  fillSqlite,
  type LargeQueue,
} from "../test/helpers/large-queue.js";
import { pgAvailable, startPgCluster, type PgCluster } from "../test/helpers/pg-cluster.js";
import type { BenchResult } from "./types.js";

const SIZE: LargeQueue = {
  finished: Number(process.env.FAXGATE_BENCH_FINISHED ?? 1_000_000),
  waiting: Number(process.env.FAXGATE_BENCH_WAITING ?? 50_000),
};
const BUSY = Number(process.env.FAXGATE_BENCH_BUSY ?? 0);
const ONLY_BUSY = process.env.FAXGATE_BENCH_ONLY === "busy";
const CLAIMS = 500;
const PER_CLAIM = 10;

/** p50 and p99 of CLAIMS claims of PER_CLAIM jobs each, in ms. */
async function timeClaims(store: QueueStore): Promise<{ p50: number; p99: number; claimed: number }> {
  const times: number[] = [];
  let claimed = 0;
  for (let i = 0; i < CLAIMS; i++) {
    const t0 = performance.now();
    const got = await store.claimDue("bench", PER_CLAIM, 60_000);
    times.push(performance.now() - t0);
    claimed += got.length;
    if (got.length === 0) break;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return { p50: at(0.5), p99: at(0.99), claimed };
}

/** Claim p99 on SQLite with `q`'s rows (a fresh data folder under `dir`). */
async function sqliteP99(dir: string, q: LargeQueue): Promise<number> {
  const data = path.join(dir, `sqlite-${q.finished}`);
  await SqliteStore.open({ dataDir: data }).close();
  fillSqlite(path.join(data, "faxgate.db"), q);
  const store = SqliteStore.open({ dataDir: data });
  try {
    return report("SQLite", q, await timeClaims(store));
  } finally {
    await store.close();
  }
}

/** Claim p99 on PostgreSQL with `q`'s rows (a fresh database). */
async function postgresP99(cluster: PgCluster, dir: string, q: LargeQueue): Promise<number> {
  const url = await cluster.createDatabase();
  const opts = { url, dataDir: path.join(dir, `pg-${q.finished}`) };
  await (await PgStore.open(opts)).close();
  await fillPostgres(url, q);
  const store = await PgStore.open(opts);
  try {
    return report("PostgreSQL", q, await timeClaims(store));
  } finally {
    await store.close();
  }
}

/** Passes with BUSY waiting to one busy number: p50 while the others are claimed, then idle. */
async function busyPasses(store: QueueStore): Promise<{ claiming: number; idle: number }> {
  const claiming = await timeClaims(store);
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < CLAIMS; i++) {
    const t0 = performance.now();
    const got = await store.claimDue("bench", PER_CLAIM, 60_000);
    times.push(performance.now() - t0);
    if (got.length > 0) throw new Error("a pass with only the busy number left claimed something");
  }
  const cpu = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  const idle = times[Math.floor(times.length / 2)]!;
  process.stderr.write(
    `large-queue: busy number (${BUSY} waiting to it): claiming p50 ${claiming.p50.toFixed(2)} ms (${claiming.claimed} claimed), idle pass p50 ${idle.toFixed(3)} ms, this process's CPU ${((cpu.user + cpu.system) / CLAIMS / 1000).toFixed(3)} ms a pass\n`,
  );
  return { claiming: claiming.p50, idle };
}

async function sqliteBusy(dir: string, q: LargeQueue): Promise<{ claiming: number; idle: number }> {
  const data = path.join(dir, `sqlite-busy-${q.finished}`);
  await SqliteStore.open({ dataDir: data }).close();
  fillSqlite(path.join(data, "faxgate.db"), q);
  addBusySqlite(path.join(data, "faxgate.db"), BUSY);
  const store = SqliteStore.open({ dataDir: data });
  try {
    return await busyPasses(store);
  } finally {
    await store.close();
  }
}

async function postgresBusy(
  cluster: PgCluster,
  dir: string,
  q: LargeQueue,
): Promise<{ claiming: number; idle: number }> {
  const url = await cluster.createDatabase();
  const opts = { url, dataDir: path.join(dir, `pg-busy-${q.finished}`) };
  await (await PgStore.open(opts)).close();
  await fillPostgres(url, q);
  await addBusyPostgres(url, BUSY);
  const store = await PgStore.open(opts);
  try {
    return await busyPasses(store);
  } finally {
    await store.close();
  }
}

const busyRow = (backend: string, r: { claiming: number; idle: number }): BenchResult => ({
  figure: `idle pass p50, ${backend}, ${BUSY.toLocaleString("en")} waiting to one busy number (${label(SIZE)})`,
  value: r.idle,
  unit: "ms",
  note: `${backend}: claiming passes p50 ${r.claiming.toFixed(2)} ms with the busy number's queue in front`,
});

function report(backend: string, q: LargeQueue, r: { p50: number; p99: number; claimed: number }): number {
  process.stderr.write(
    `large-queue: ${backend}, ${label(q)}: ${r.claimed} jobs claimed, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms\n`,
  );
  return r.p99;
}

const label = (q: LargeQueue) =>
  `${q.finished.toLocaleString("en")} finished, ${q.waiting.toLocaleString("en")} waiting`;

// The peer of each figure is the same claims with no finished job at all: the ratio is what the
// finished jobs cost (each claim's commit, fsynced, is in both).
export default async function run(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const empty: LargeQueue = { finished: 0, waiting: SIZE.waiting };
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-large-queue-"));
  try {
    if (BUSY > 0) out.push(busyRow("SQLite", await sqliteBusy(dir, SIZE)));
    if (ONLY_BUSY && pgAvailable()) return out;
    if (ONLY_BUSY) {
      const cluster = await startPgCluster({ durable: true });
      try {
        out.push(busyRow("PostgreSQL", await postgresBusy(cluster, dir, SIZE)));
      } finally {
        cluster.destroy();
      }
      return out;
    }
    const liteEmpty = await sqliteP99(dir, empty);
    out.push({
      figure: `claim p99, SQLite (${label(SIZE)})`,
      value: await sqliteP99(dir, SIZE),
      unit: "ms",
      peer: { label: "no finished jobs", value: liteEmpty },
      goal: "<= 1.5",
    });
    const missing = pgAvailable();
    if (missing) {
      process.stderr.write(`large-queue: PostgreSQL skipped: ${missing}\n`);
      return out;
    }
    const cluster = await startPgCluster({ durable: true });
    try {
      if (BUSY > 0) out.push(busyRow("PostgreSQL", await postgresBusy(cluster, dir, SIZE)));
      const pgEmpty = await postgresP99(cluster, dir, empty);
      out.push({
        figure: `claim p99, PostgreSQL (${label(SIZE)})`,
        value: await postgresP99(cluster, dir, SIZE),
        unit: "ms",
        peer: { label: "no finished jobs", value: pgEmpty },
        goal: "<= 1.5",
      });
    } finally {
      cluster.destroy();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const r of await run())
    console.log(
      `${r.figure}: ${r.value.toFixed(3)} ${r.unit}${r.peer ? ` (${r.peer.label}: ${r.peer.value.toFixed(2)} ${r.unit})` : ""}`,
    );
}
