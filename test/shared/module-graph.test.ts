// The stages under src/ form a pipeline (docs/architecture.md): a folder may use the folders
// downstream of it and the shared ones, but two folders that import each other are one knot, and
// the next change to either drags the other along. This test reads the import lines (type-only
// imports count too: they tie the meaning of two folders together just the same) and fails on any
// cycle between folders of src/, and on any cycle between files. Each folder shows one face, its
// index.ts (docs/architecture.md): an import of another folder's inner file fails too, so what a
// folder keeps inside can change without its users noticing.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(__dirname, "../../src");

/**
 * Folder cycles known today and being removed by other work. Each entry is a cycle as this test
 * prints it; delete an entry when its cycle is gone (the test then fails if it comes back).
 */
const KNOWN_FOLDER_CYCLES: readonly string[] = [];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** Relative imports of a file: what it says, and the absolute .ts path it names. */
function importLines(file: string): { spec: string; target: string }[] {
  const text = readFileSync(file, "utf8");
  const out: { spec: string; target: string }[] = [];
  const re = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const spec = (m[1] ?? m[2])!;
    out.push({ spec, target: path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts")) });
  }
  return out;
}

function importsOf(file: string): string[] {
  return importLines(file).map((i) => i.target);
}

/** The top-level folder of src/ a path is in; null for src/'s own files (errors.ts, main.ts). */
function folderOf(file: string): string | null {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length > 1 && rel[0] !== ".." ? rel[0]! : null;
}

/**
 * Programs that load only what they run (the CLI's commands, the worker threads' tasks): an entry
 * file loads all it re-exports, so these import the inner files they need (scripts/rooms-codemod.mjs
 * keeps the same list).
 */
const LAZY_LOADERS = [/^cli\//, /^workers\/tasks\.ts$/];

/**
 * Imports that pass another folder's face: `file` (under src/) names an inner file of a folder it is
 * not in. Single files of src/ (errors.ts, clock.ts, format.ts) are shared as they are.
 */
function innerImports(file: string, imports: { spec: string; target: string }[]): string[] {
  const from = folderOf(file);
  if (LAZY_LOADERS.some((re) => re.test(path.relative(SRC, file).split(path.sep).join("/")))) return [];
  return imports
    .filter(({ target }) => {
      const to = folderOf(target);
      return to !== null && to !== from && target !== path.join(SRC, to, "index.ts");
    })
    .map(
      ({ spec, target }) =>
        `src/${path.relative(SRC, file)} imports "${spec}", an inner file of ${folderOf(target)}/: ` +
        `import it from ${folderOf(target)}/index.ts (node scripts/rooms-codemod.mjs adds it there)`,
    );
}

/** The top-level unit of src/ a file belongs to: its folder, or the file itself (main.ts, errors.ts). */
function unitOf(file: string): string {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length > 1 ? rel[0]! : rel[0]!.replace(/\.ts$/, "");
}

/** Every elementary cycle's strongly connected component, as "a -> b -> a" strings (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) found.push(comp.sort().join(" <-> "));
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return found.sort();
}

function graphs(): { folders: Map<string, Set<string>>; files: Map<string, Set<string>> } {
  const folders = new Map<string, Set<string>>();
  const files = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const from = unitOf(file);
    const rel = path.relative(SRC, file);
    for (const target of importsOf(file)) {
      if (!target.startsWith(SRC + path.sep)) continue;
      const to = unitOf(target);
      if (to !== from) (folders.get(from) ?? folders.set(from, new Set()).get(from)!).add(to);
      (files.get(rel) ?? files.set(rel, new Set()).get(rel)!).add(path.relative(SRC, target));
    }
  }
  return { folders, files };
}

describe("module graph of src/", () => {
  it("has no cycle between folders except the listed ones being removed", () => {
    const found = cycles(graphs().folders);
    expect(found.filter((c) => !KNOWN_FOLDER_CYCLES.includes(c))).toEqual([]);
  });

  it("has no cycle between files", () => {
    expect(cycles(graphs().files)).toEqual([]);
  });

  it("imports another folder only through its index.ts", () => {
    expect(sourceFiles(SRC).flatMap((f) => innerImports(f, importLines(f)))).toEqual([]);
  });

  it("the face rule sees an inner import, and lets the index and a folder's own files pass", () => {
    const file = path.join(SRC, "smtp", "server.ts");
    const at = (spec: string) => ({ spec, target: path.resolve(SRC, "smtp", spec.replace(/\.js$/, ".ts")) });
    expect(
      innerImports(file, [
        at("../intake/mail-door.js"),
        at("../intake/index.js"),
        at("./smtp-reply.js"),
        at("../errors.js"),
      ]),
    ).toEqual([
      'src/smtp/server.ts imports "../intake/mail-door.js", an inner file of intake/: import it from intake/index.ts (node scripts/rooms-codemod.mjs adds it there)',
    ]);
  });

  it("the cycle finder sees a cycle when there is one", () => {
    const g = new Map([
      ["a", new Set(["b"])],
      ["b", new Set(["c"])],
      ["c", new Set(["a"])],
      ["d", new Set(["a"])],
    ]);
    expect(cycles(g)).toEqual(["a <-> b <-> c"]);
  });
});
