// docs/queue.md shows the recipient state machine: its table and diagram must be the table the
// store builds its guards from (src/store/transitions.ts), not a copy that drifts.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type ColumnWrite, TRANSITIONS, type Transition } from "../../src/store/transitions.js";

const WRITES: Record<ColumnWrite, (c: string) => string> = {
  given: (c) => `\`${c}\``,
  clear: (c) => `\`${c}\` = NULL`,
  zero: (c) => `\`${c}\` = 0`,
  now: (c) => `\`${c}\` = now`,
  ifGiven: (c) => `\`${c}\` if given`,
  add: (c) => `\`${c}\` + n`,
  increment: (c) => `\`${c}\` + 1`,
  refund: (c) => `\`${c}\` - n (not below 0)`,
};

/** What a step writes besides `state` and `updated_at`, as the table says it. */
function writes(t: Transition): string {
  const cols = Object.entries(t.sets) as Array<[string, ColumnWrite]>;
  return cols.length === 0 ? "nothing else" : cols.map(([c, w]) => WRITES[w](c)).join(", ");
}

/** The generated part of docs/queue.md: a Mermaid diagram and a table of every transition. */
function renderTransitionDocs(): string {
  const entries = Object.entries(TRANSITIONS);
  const edges = new Map<string, string[]>();
  for (const [name, t] of entries) {
    for (const from of t.from) {
      const k = `${from} --> ${t.to}`;
      edges.set(k, [...(edges.get(k) ?? []), name]);
    }
  }
  const lines = [
    "```mermaid",
    "stateDiagram-v2",
    "    [*] --> queued: enqueue",
    ...[...edges].map(([edge, names]) => `    ${edge}: ${names.join(", ")}`),
    "    delivered --> [*]",
    "    failed --> [*]",
    "    cancelled --> [*]",
    "```",
    "",
    "| Transition | From | To | Meaning |",
    "|---|---|---|---|",
    ...entries.map(
      ([name, t]) => `| \`${name}\` | ${t.from.map((s) => `\`${s}\``).join(", ")} | \`${t.to}\` | ${t.says} |`,
    ),
    "",
    "Every step sets `state` and `updated_at`; besides them it writes (both backends render their",
    "UPDATE from this, src/store/transition-sql.ts):",
    "",
    "| Transition | Writes |",
    "|---|---|",
    ...entries.map(([name, t]) => `| \`${name}\` | ${writes(t)} |`),
    "",
  ];
  return lines.join("\n");
}

describe("docs/queue.md", () => {
  it("shows the transition table as src/store/transitions.ts has it", () => {
    const doc = readFileSync(new URL("../../docs/queue.md", import.meta.url), "utf8");
    const m = /<!-- transitions:start[^>]*-->\n([\s\S]*?)<!-- transitions:end -->/.exec(doc);
    expect(m, "the markers around the generated part").not.toBeNull();
    expect(m![1]).toBe(renderTransitionDocs());
  });
});
