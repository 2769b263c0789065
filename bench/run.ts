// `npm run bench`: runs every bench/*.bench.ts and prints one table (figure, value, peer or
// ceiling, ratio = value / peer), also written to bench/results.json; docs/bench.md says what each
// row measures. `npm run bench -- smtp` runs only the benchmarks whose file name contains "smtp".
import { readdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { BenchResult } from "./types.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const filter = process.argv.slice(2);
// the issue's order: SMTP against its peers, memory, spool, API calls, 250 -> send; others after
const ORDER = ["smtp-daemon", "smtp-accept", "smtp-memory", "spool-throughput", "dispatch-api-calls", "send-latency"];
const rank = (f: string) => {
  const i = ORDER.findIndex((o) => f.startsWith(o));
  return i === -1 ? ORDER.length : i;
};
const files = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => filter.length === 0 || filter.some((w) => f.includes(w)))
  .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));

const rows: Array<BenchResult & { bench: string; ratio: number | null }> = [];
// other work on the machine moves every figure: the load averages go into the results with them
const loadStart = os.loadavg();
for (const f of files) {
  process.stderr.write(`bench: ${f} ...\n`);
  const started = Date.now();
  try {
    const mod = (await import(pathToFileURL(path.join(here, f)).href)) as { default: () => Promise<BenchResult[]> };
    for (const r of await mod.default()) {
      rows.push({ ...r, bench: f, ratio: r.peer && r.peer.value !== 0 ? r.value / r.peer.value : null });
    }
    process.stderr.write(`bench: ${f} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  } catch (err) {
    process.stderr.write(`bench: ${f} FAILED: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  }
}

const fmt = (n: number) =>
  Number.isInteger(n) ? String(n) : n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toPrecision(3);
const table = [
  ["figure", "value", "peer or ceiling", "ratio", "goal"],
  ...rows.map((r) => [
    r.figure,
    `${fmt(r.value)} ${r.unit}`,
    r.peer ? `${fmt(r.peer.value)} ${r.unit} (${r.peer.label})` : "-",
    r.ratio === null ? "-" : r.ratio.toFixed(2),
    r.goal ?? "-",
  ]),
];
const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
const lines = table.map((row) =>
  row
    .map((c, i) => c.padEnd(widths[i]!))
    .join("  ")
    .trimEnd(),
);
lines.splice(1, 0, widths.map((w) => "-".repeat(w)).join("  "));
process.stdout.write(`\n${lines.join("\n")}\n`);
const notes = [...new Set(rows.flatMap((r) => (r.note ? [r.note] : [])))];
if (notes.length > 0) process.stdout.write(`\nnotes:\n${notes.map((n) => `- ${n}`).join("\n")}\n`);
const machine = {
  cpus: os.cpus().length,
  loadavgAtStart: loadStart.map((l) => Number(l.toFixed(2))),
  loadavgAtEnd: os.loadavg().map((l) => Number(l.toFixed(2))),
};
process.stdout.write(
  `\nmachine: ${machine.cpus} cpus, load average ${machine.loadavgAtStart.join(" ")} at the start, ${machine.loadavgAtEnd.join(" ")} at the end\n`,
);
if (filter.length === 0) {
  writeFileSync(
    path.join(here, "results.json"),
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, machine, rows }, null, 2)}\n`,
  );
  process.stdout.write(`written to bench/results.json\n`);
} else {
  // a partial run would replace the full report with a few rows
  process.stdout.write(`partial run: bench/results.json left as it was\n`);
}
