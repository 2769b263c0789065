// The queue's own operations on both stores, without SMTP or HTTP around them: how many a second
// one caller gets through enqueue (with a small PDF, durable when it resolves), the dispatcher's
// claim -> accepted -> delivered cycle, a notification's enqueue -> claim -> sent, and the key/value
// state. Written for issue 49 (the queue written once): run before and after a change to the
// store's query layer, on the same machine, and compare (docs/bench.md "store written once").
// PostgreSQL: a private cluster with its durable defaults (fsync on), as bench/pg-store.bench.ts.
// Alone: node --import tsx bench/pg-store-ops.bench.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PgStore } from "../src/store/postgres/pg-store.js";
import type { QueueStore } from "../src/store/queue-store.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import { pgAvailable, startPgCluster, type PgCluster } from "../test/helpers/pg-cluster.js";
import { TEST_PDF } from "../test/helpers/store.js";
import type { BenchResult } from "./types.js";

const JOBS = Number(process.env.FAXGATE_BENCH_JOBS ?? 300);

type Backend = "sqlite" | "postgres";

async function openStore(backend: Backend, cluster: PgCluster | null, dir: string): Promise<QueueStore> {
  if (backend === "sqlite") return SqliteStore.open({ dataDir: path.join(dir, "data"), threadsNow: true });
  return PgStore.open({ url: await cluster!.createDatabase(), dataDir: path.join(dir, "data") });
}

/** Operations a second for each step, one caller at a time (the latency a stage sees). */
async function measure(backend: Backend, cluster: PgCluster | null): Promise<Record<string, number>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-ops-"));
  const store = await openStore(backend, cluster, dir);
  const rate = async (n: number, step: (i: number) => Promise<unknown>): Promise<number> => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await step(i);
    return n / (Number(process.hrtime.bigint() - started) / 1e9);
  };
  try {
    const doc = path.join(dir, "doc.pdf");
    writeFileSync(doc, TEST_PDF);
    const enqueue = await rate(JOBS, (i) =>
      store.enqueue({
        source: "cli",
        user: "bench",
        cover: { enabled: false },
        recipients: [{ number: `+1555${String(3_100_000 + i)}` }],
        documents: [{ path: doc, name: "doc.pdf", contentType: "application/pdf" }],
      }),
    );
    const cycle = await rate(JOBS, async (i) => {
      const [g] = await store.claimDue("bench", 1, 60_000, { perNumber: 1 });
      if (!g) throw new Error(`${backend}: nothing to claim at ${i}`);
      const key = { jobId: g.job.id, idx: g.recipients[0]!.idx };
      await store.markAccepted(key, g.sendId, { messageId: `m-${i}` }, 1);
      await store.complete(key, { resultCode: "0", pagesComplete: 1 });
    });
    const notify = await rate(JOBS, async (i) => {
      await store.enqueueNotification({
        kind: "outcome",
        user: "bench",
        dedupeKey: `n-${i}`,
        payload: { jobId: `j-${i}` },
      });
      const [n] = await store.claimNotifications("bench", 1, 60_000);
      if (!n) throw new Error(`${backend}: no notification at ${i}`);
      await store.completeNotification(n.id, "sent");
    });
    const kv = await rate(JOBS, async (i) => {
      await store.setState(`k-${i % 10}`, String(i));
      await store.getState(`k-${i % 10}`);
    });
    const listed = await rate(50, () => store.listJobs({ limit: 50 }));
    return { enqueue, cycle, notify, kv, listed };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const STEPS: Array<[string, string]> = [
  ["enqueue", "enqueue (small PDF, durable)"],
  ["cycle", "claim -> accepted -> delivered"],
  ["notify", "notification enqueue -> claim -> sent"],
  ["kv", "setState + getState"],
  ["listed", "listJobs (50 of them)"],
];

export default async function bench(): Promise<BenchResult[]> {
  const missing = pgAvailable();
  const cluster = missing ? null : await startPgCluster({ durable: true });
  try {
    const sqlite = await measure("sqlite", null);
    const pg = cluster ? await measure("postgres", cluster) : null;
    const out: BenchResult[] = [];
    for (const [k, label] of STEPS) {
      out.push({ figure: `store ops: SQLite ${label}`, value: sqlite[k]!, unit: "op/s" });
      if (pg) out.push({ figure: `store ops: PostgreSQL ${label}`, value: pg[k]!, unit: "op/s" });
    }
    if (missing) out[0]!.note = `PostgreSQL rows skipped: ${missing}`;
    return out;
  } finally {
    cluster?.destroy();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench()) process.stdout.write(`${r.figure}: ${r.value.toFixed(1)} ${r.unit}\n`);
}
