// Every child logger of src/ is made by src/log's childLog (or deferredChild, which uses it): pino
// censors a line's fields through faxgate's formatters.log, but a child's bindings only when
// childLog censors them first (src/log/logger.ts), so a `.child(` anywhere else would write its
// bindings as given, secrets and fax numbers too. This test reads the sources and refuses one.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";

const SRC = path.resolve(__dirname, "../../src");
const LOG_ROOM = path.join(SRC, "log");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** `file:line` of each `.child(` call in `text` (also `?.child(` and one split over lines). */
function childCalls(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\.\s*child\s*\(/g)) {
    out.push(`${file}:${text.slice(0, m.index).split("\n").length}`);
  }
  return out;
}

it("makes child loggers in src/ only through src/log (childLog)", () => {
  const files = sourceFiles(SRC).filter((f) => !f.startsWith(LOG_ROOM + path.sep));
  expect(files.length).toBeGreaterThan(100);
  const calls = files.flatMap((f) => childCalls(path.relative(SRC, f), readFileSync(f, "utf8")));
  expect(calls, "use childLog(parent, bindings) from src/log instead of parent.child(bindings)").toEqual([]);
  // and the helper is what they use: the call sites did not simply go away
  const uses = files.filter((f) => /\bchildLog\(/.test(readFileSync(f, "utf8"))).length;
  expect(uses).toBeGreaterThan(20);
});

it("sees a child call however it is written", () => {
  const text = "const a = log.child({ a: 1 });\nctx.log\n  .child({ job })\nx?.child ({})\nchildLog(log, {});\n";
  expect(childCalls("f.ts", text)).toEqual(["f.ts:1", "f.ts:3", "f.ts:4"]);
});
