// OCR and search (issue 51): OCR pages per minute per core (ocrmypdf with one tesseract thread,
// scanned-looking pages at 204x196 dpi, one after the other), and the latency of the one search
// operation (p50, p99) over many stored faxes with text, on SQLite (FTS5) and on a private
// PostgreSQL cluster (tsvector + GIN). Alone: node --import tsx bench/ocr.bench.ts
// Small trial: FAXGATE_BENCH_PAGES=2 FAXGATE_BENCH_FAXES=2000 node --import tsx bench/ocr.bench.ts
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OcrRunner } from "../src/ocr/ocr-run.js";
import { PgStore } from "../src/store/postgres/pg-store.js";
import type { QueueStore } from "../src/store/queue-store.js";
import { searchReceived, searchWords } from "../src/store/sql/search.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import { pgAvailable, startPgCluster } from "../test/helpers/pg-cluster.js";
import { prng } from "../test/helpers/prng.js";
import { scannedFax } from "../test/helpers/scanned-fax.js";
import type { BenchResult } from "./types.js";

const PAGES = Number(process.env.FAXGATE_BENCH_PAGES) || 10;
const FAXES = Number(process.env.FAXGATE_BENCH_FAXES) || 100_000;
const QUERIES = Number(process.env.FAXGATE_BENCH_QUERIES) || 300;

const VOCABULARY = (
  "referral patient authorization prior cardiology notice matter court glucose lab results invoice order " +
  "pharmacy prescription insurance claim denied approved appointment follow urgent please return signed form " +
  "alvarez smith jones garcia miller davis rodriguez martinez hernandez lopez gonzalez wilson anderson thomas"
).split(" ");

async function ocrRate(): Promise<BenchResult> {
  const runner = new OcrRunner({
    command: "ocrmypdf",
    languages: ["eng"],
    timeoutMs: 300_000,
    memoryMb: 2048,
    sandbox: "auto",
  });
  if (!runner.available())
    return { figure: "ocr: pages per minute per core", value: 0, unit: "-", note: "skipped: ocrmypdf is absent" };
  const pages = await Promise.all(
    Array.from({ length: PAGES }, (_, i) =>
      scannedFax(
        [
          `Page ${i} of a received fax`,
          "Prior authorization request for Maria Alvarez",
          "Please return the signed form",
        ],
        { seed: i + 1 },
      ),
    ),
  );
  const started = performance.now();
  for (const p of pages) {
    const r = await runner.read(p);
    if (r.kind !== "read") throw new Error(`page not read: ${r.why}`);
  }
  const minutes = (performance.now() - started) / 60_000;
  return {
    figure: "ocr: pages per minute per core (204x196 dpi, one tesseract thread, bubblewrap)",
    value: PAGES / minutes,
    unit: "pages/min",
    note: `${PAGES} pages in ${(minutes * 60).toFixed(1)} s`,
  };
}

/** FAXES faxes with text, written in batches through the store's own query port. */
async function fill(store: QueueStore): Promise<void> {
  const rnd = prng(51);
  const word = () => VOCABULARY[Math.floor(rnd() * VOCABULARY.length)]!;
  const BATCH = 500;
  for (let start = 0; start < FAXES; start += BATCH) {
    await store.sql.tx("bench fill", async (t) => {
      for (let i = start; i < Math.min(FAXES, start + BATCH); i++) {
        const id = `FRBENCH${String(i).padStart(8, "0")}`;
        const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
        await t.run(
          `INSERT INTO received_faxes (id, message_id, user_name, dialled, sender, csid, pages, status, received_at, stored_at, groups, state, bytes, data)
           VALUES (?, ?, ?, ?, ?, ?, 1, 'success', ?, ?, '[]', 'new', 0, NULL)`,
          [
            id,
            `bench-${i}`,
            `user${i % 50}`,
            "+15550100200",
            `+1555${String(i % 10_000_000).padStart(7, "0")}`,
            "BENCH",
            at,
            at,
          ],
        );
        const body = Array.from({ length: 6 }, () => Array.from({ length: 8 }, word).join(" ")).join("\n");
        await t.run(
          `INSERT INTO received_text (fax_id, user_name, state, next_attempt_at, body, created_at, done_at)
           VALUES (?, ?, 'done', ?, ?, ?, ?)`,
          [id, `user${i % 50}`, at, body, at, at],
        );
      }
    });
  }
}

async function searchLatency(store: QueueStore, backend: string): Promise<BenchResult[]> {
  await fill(store);
  const rnd = prng(7);
  const times: number[] = [];
  for (let q = 0; q < QUERIES; q++) {
    const n = 1 + Math.floor(rnd() * 2);
    const words = searchWords(
      Array.from({ length: n }, () => VOCABULARY[Math.floor(rnd() * VOCABULARY.length)]).join(" "),
    );
    const visibleTo = q % 2 === 0 ? ("all" as const) : { user: `user${q % 50}`, groups: [] };
    const t0 = performance.now();
    await searchReceived(store.sql, { words, visibleTo, limit: 50 });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
  const note = `${FAXES} faxes, ${QUERIES} searches of 1-2 words, half as an operator, half as one of 50 users`;
  return [
    { figure: `search: p50 over ${FAXES} faxes, ${backend}`, value: at(0.5), unit: "ms", note },
    { figure: `search: p99 over ${FAXES} faxes, ${backend}`, value: at(0.99), unit: "ms", note },
  ];
}

export async function bench(): Promise<BenchResult[]> {
  const out: BenchResult[] = [await ocrRate()];
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-search-"));
  try {
    const sqlite = SqliteStore.open({ dataDir: path.join(dir, "sqlite") });
    try {
      out.push(...(await searchLatency(sqlite, "SQLite FTS5")));
    } finally {
      await sqlite.close();
    }
    const missing = pgAvailable();
    if (missing) out.push({ figure: "search: PostgreSQL rows", value: 0, unit: "-", note: `skipped: ${missing}` });
    else {
      const cluster = await startPgCluster();
      try {
        const pg = await PgStore.open({ url: await cluster.createDatabase(), dataDir: path.join(dir, "pg") });
        try {
          out.push(...(await searchLatency(pg, "PostgreSQL GIN")));
        } finally {
          await pg.close();
        }
      } finally {
        cluster.destroy();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of await bench())
    process.stdout.write(`${r.figure}: ${r.value.toFixed(2)} ${r.unit} (${r.note ?? ""})\n`);
}
