// Where the ledger's append spends its time on each store (issue 56): concurrent writers each
// committing a small transaction (one row of their own, as a job's commit is), with and without a
// ledger row appended last, timed step by step: the chain's lock (its wait), the head read, the
// insert, the commit. On PostgreSQL the append is the unsealed row, and the sealer runs beside the
// writers as a gateway's does (kicked after each commit, timed to its last seal).
// Alone: node --import tsx bench/ledger-append-profile.ts
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { PgStore } from "../src/store/postgres/pg-store.js";
import type { QueueStore } from "../src/store/queue-store.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import { appendLedger, type LedgerFields } from "../src/store/sql/ledger.js";
import { ChainSealer } from "../src/ledger/sealer.js";
import { pgAvailable, startPgCluster } from "../test/helpers/pg-cluster.js";

const WRITERS = Number(process.env.FAXGATE_BENCH_WRITERS) || 10;
const EACH = Number(process.env.FAXGATE_BENCH_EACH) || 100;

const fields = (i: number): LedgerFields => ({
  at: new Date().toISOString(),
  action: "sent",
  actor_kind: "person",
  actor_id: "alice",
  object_kind: "recipient",
  object_id: `J${i}#0`,
  door: "smtp",
  client: "127.0.0.1",
  number_hash: "ab".repeat(32),
  detail: "{}",
});

let round = 0;
async function run(store: QueueStore, ledger: boolean) {
  round++;
  const steps = { tx: 0, ledger: 0 };
  let n = 0;
  const sealer = new ChainSealer(store.sql, (err) => {
    throw err;
  });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < EACH; i++) {
        const s = performance.now();
        await store.sql.tx("probe", async (t) => {
          await t.run("INSERT INTO kv_probe (k, v) VALUES (?, ?)", [`${round}-${w}-${i}`, "x".repeat(200)]);
          if (ledger) {
            const l = performance.now();
            await appendLedger(t, fields(n++));
            steps.ledger += performance.now() - l;
          }
        });
        steps.tx += performance.now() - s;
        if (ledger) sealer.kick();
      }
    }),
  );
  await sealer.sealNow();
  const total = WRITERS * EACH;
  return {
    perSecond: total / ((performance.now() - t0) / 1000),
    txMs: steps.tx / total,
    appendMs: steps.ledger / total,
  };
}

async function measure(name: string, open: () => Promise<QueueStore>) {
  const store = await open();
  try {
    await store.sql.run("CREATE TABLE kv_probe (k TEXT PRIMARY KEY, v TEXT)");
    const out: string[] = [];
    for (const ledger of [false, true, false, true]) {
      const r = await run(store, ledger);
      out.push(
        `${name} ${ledger ? "with   " : "without"}: ${r.perSecond.toFixed(0)} commits/s, ${r.txMs.toFixed(2)} ms a transaction${ledger ? `, of which the append (SQLite: lock, head, insert; PostgreSQL: the unsealed insert) ${r.appendMs.toFixed(2)} ms` : ""}`,
      );
    }
    process.stdout.write(`${out.join("\n")}\n`);
  } finally {
    await store.close();
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-ledger-profile-"));
try {
  await measure("SQLite    ", async () => SqliteStore.open({ dataDir: path.join(dir, "sqlite"), threadsNow: true }));
  const missing = pgAvailable();
  if (missing) process.stdout.write(`PostgreSQL skipped: ${missing}\n`);
  else {
    const cluster = await startPgCluster({ durable: true });
    try {
      await measure("PostgreSQL", async () =>
        PgStore.open({ url: await cluster.createDatabase(), dataDir: path.join(dir, "pg") }),
      );
    } finally {
      cluster.destroy();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
