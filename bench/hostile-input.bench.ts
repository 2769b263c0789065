// How long hostile text takes the pure checks that once backtracked: the operator's result rules
// over a 300 KB service text, and a destination pattern of 38 '#' and a '*' against a long number.
// These were wall-clock bounds inside the main test suite, where two busy cores made them flake;
// the tests keep what the answer is, this file keeps how long it takes (docs/bench.md).
// Alone: node --import tsx bench/hostile-input.bench.ts
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { explainFailure, operatorRules } from "../src/fax/result-rules.js";
import { checkDestination } from "../src/recipients/destination-policy.js";
import type { BenchResult } from "./types.js";

/** The best of `rounds` timings of `fn`, in ms: the figure is the work's, not the machine's other load. */
function bestOf(rounds: number, fn: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    fn();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

export default async function bench(): Promise<BenchResult[]> {
  const text = `${"no ".repeat(50_000)}fax${" a".repeat(50_000)}`;
  const rules = operatorRules([{ text: "aaaa", action: "fail" }]);
  const resultRules = bestOf(5, () => explainFailure({ resultCode: "x", resultInfo: text, errorInfo: text }, rules));
  const pattern = { rules: [{ action: "deny" as const, pattern: `+${"#".repeat(38)}*` }] };
  const destinations = bestOf(5, () => {
    for (let i = 0; i < 1000; i++) checkDestination("+123456789012345", pattern);
  });
  return [
    { figure: "queue.resultRules over a 300 KB hostile text", value: round(resultRules), unit: "ms", goal: "<= 200" },
    {
      figure: "1,000 destination checks, pattern of 38 # and *",
      value: round(destinations),
      unit: "ms",
      goal: "<= 5000",
    },
  ];
}

const round = (ms: number) => Math.round(ms * 10) / 10;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await bench());
