// A library file as its upstream release ships it, for differential tests of patches/: the
// installed (patched) text with one patch's hunks for that file undone, loaded as a CommonJS
// module of the library's folder. The reference is then exactly upstream's code, not a copy
// that could drift from it, and a patch that is not applied makes the loader throw.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import Module from "node:module";
import path from "node:path";
import vm from "node:vm";

const root = path.resolve(import.meta.dirname, "../..");

/** The [before, after] text of each hunk a unified diff makes to `file` (as scripts/apply-patches.mjs reads it). */
function hunksOf(patchText: string, file: string): Array<{ before: string; after: string }> {
  const out: Array<{ before: string[]; after: string[] }> = [];
  let inFile = false;
  let hunk: { before: string[]; after: string[] } | null = null;
  for (const line of patchText.split("\n")) {
    if (line.startsWith("+++ ")) {
      inFile = line.slice(4).split("\t")[0].replace(/^b\//, "") === file;
      hunk = null;
    } else if (line.startsWith("--- ")) {
      hunk = null;
    } else if (inFile && line.startsWith("@@")) {
      hunk = { before: [], after: [] };
      out.push(hunk);
    } else if (hunk && /^[ +-]/.test(line)) {
      if (line[0] !== "+") hunk.before.push(line.slice(1));
      if (line[0] !== "-") hunk.after.push(line.slice(1));
    } else if (hunk && line === "") {
      hunk.before.push("");
      hunk.after.push("");
    }
  }
  return out.map((h) => ({ before: h.before.join("\n"), after: h.after.join("\n") }));
}

/** The folder of an installed package (as scripts/apply-patches.mjs finds it). */
export function packageDir(name: string): string {
  const require = createRequire(path.join(root, "package.json"));
  let d = path.dirname(require.resolve(name));
  for (;;) {
    const pj = path.join(d, "package.json");
    try {
      if (JSON.parse(readFileSync(pj, "utf8")).name === name) return d;
    } catch {
      // no package.json at this level
    }
    const up = path.dirname(d);
    if (up === d) throw new Error(`cannot find the folder of ${name}`);
    d = up;
  }
}

/**
 * Loads `file` of package `pkg` as upstream ships it: the installed text with the hunks that
 * patches/`patchName` makes to it undone. Throws when a hunk's result is not in the installed
 * file (the patch is not applied, or the library moved).
 */
export function loadUnpatched<T>(pkg: string, file: string, patchName: string): T {
  const dir = packageDir(pkg);
  const filename = path.join(dir, file);
  let source = readFileSync(filename, "utf8");
  const hunks = hunksOf(readFileSync(path.join(root, "patches", patchName), "utf8"), file);
  if (!hunks.length) throw new Error(`${patchName} changes nothing in ${file}`);
  for (const h of hunks) {
    if (!source.includes(h.after)) throw new Error(`${patchName} is not applied to ${pkg}/${file}`);
    source = source.replace(h.after, () => h.before);
  }
  const wrapper = vm.runInThisContext(Module.wrap(source), { filename: `${filename} (unpatched)` });
  const mod = { exports: {} as T };
  wrapper(mod.exports, createRequire(filename), mod, filename, path.dirname(filename));
  return mod.exports;
}

/** The installed (patched) file, loaded the same way as loadUnpatched loads the reference. */
export function loadInstalled<T>(pkg: string, file: string): T {
  return createRequire(path.join(packageDir(pkg), "package.json"))(path.join(packageDir(pkg), file)) as T;
}
