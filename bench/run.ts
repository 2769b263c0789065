// `npm run bench`: runs every bench/*.bench.ts and prints one table (figure, value, peer or
// ceiling, ratio), also written to bench/results.json. `npm run bench -- smtp` runs only the
// benchmarks whose file name contains "smtp".
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchResult } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const filter = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filter.length === 0 || filter.some((w) => f.includes(w)))
  .sort();

const rows: Array<BenchResult & { bench: string; ratio: number | null }> = [];
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

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toPrecision(3));
const table = [
  ['figure', 'value', 'peer or ceiling', 'ratio', 'goal'],
  ...rows.map((r) => [r.figure, `${fmt(r.value)} ${r.unit}`, r.peer ? `${fmt(r.peer.value)} ${r.unit} (${r.peer.label})` : '-', r.ratio === null ? '-' : r.ratio.toFixed(2), r.goal ?? '-']),
];
const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
const lines = table.map((row) => row.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
process.stdout.write(`\n${lines.join('\n')}\n`);
writeFileSync(path.join(here, 'results.json'), `${JSON.stringify({ at: new Date().toISOString(), node: process.version, rows }, null, 2)}\n`);
process.stdout.write(`\nwritten to bench/results.json\n`);
