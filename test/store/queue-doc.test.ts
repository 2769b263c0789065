// docs/queue.md shows the recipient state machine: its table and diagram must be the table the
// store builds its guards from (src/store/transitions.ts), not a copy that drifts.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { TRANSITIONS } from "../../src/store/transitions.js";

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
