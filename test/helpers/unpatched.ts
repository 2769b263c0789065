// A library file as its upstream release ships it, for differential tests of patches/: the
// installed (patched) text with one patch's hunks for that file undone, loaded as a CommonJS
// module of the library's folder. The reference is then exactly upstream's code, not a copy
// that could drift from it, and a patch that is not applied makes the loader throw.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import Module from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import vm from "node:vm";
import { packageDir, parsePatch } from "../../scripts/apply-patches.mjs";

const root = path.resolve(import.meta.dirname, "../..");

/** The [before, after] text of each hunk the patch makes to `file`, read by the postinstall's own parser. */
function hunksOf(patchText: string, file: string): Array<{ before: string; after: string }> {
  return parsePatch(patchText)
    .filter((f) => f.path === file)
    .flatMap((f) => f.hunks)
    .map((h) => ({ before: h.before.join("\n"), after: h.after.join("\n") }));
}

export { packageDir };

/**
 * Loads `file` of package `pkg` as upstream ships it: the installed text with the hunks that
 * patches/`patchName` makes to it undone. Throws when a hunk's result is not in the installed
 * file (the patch is not applied, or the library moved).
 */
export function loadUnpatched<T>(pkg: string, file: string, patchName: string): T {
  const filename = path.join(packageDir(pkg), file);
  const patchText = readFileSync(path.join(root, "patches", patchName), "utf8");
  if (!hunksOf(patchText, file).length) throw new Error(`${patchName} changes nothing in ${file}`);
  const mod = { exports: {} as T };
  runUnpatched(pkg, patchName, patchText, filename, mod, createRequire(filename));
  return mod.exports;
}

/** Runs `filename` of `pkg` as upstream ships it (the hunks of `patchText` undone) into `mod`. */
function runUnpatched(
  pkg: string,
  patchName: string,
  patchText: string,
  filename: string,
  mod: { exports: unknown },
  req: NodeJS.Require,
): void {
  let source = readFileSync(filename, "utf8");
  for (const h of hunksOf(patchText, path.relative(packageDir(pkg), filename).split(path.sep).join("/"))) {
    if (!source.includes(h.after)) throw new Error(`${patchName} is not applied to ${pkg}/${filename}`);
    source = source.replace(h.after, () => h.before);
  }
  const wrapper = vm.runInThisContext(Module.wrap(source), { filename: `${filename} (unpatched)` });
  wrapper(mod.exports, req, mod, filename, path.dirname(filename));
}

/** The installed (patched) file, loaded the same way as loadUnpatched loads the reference. */
export function loadInstalled<T>(pkg: string, file: string): T {
  return createRequire(path.join(packageDir(pkg), "package.json"))(path.join(packageDir(pkg), file)) as T;
}

/** Imports `file` of package `pkg` as installed (patched), as an ES module: a library's ESM build. */
export async function importInstalled<T>(pkg: string, file: string): Promise<T> {
  return (await import(pathToFileURL(path.join(packageDir(pkg), file)).href)) as T;
}

/**
 * Loads `file` of package `pkg` and the package's own files it requires, all as upstream ships
 * them (each with the hunks of patches/`patchName` undone): a whole upstream module graph, eg.
 * smtp-server's server with its upstream connection and parser, to compare a patched server's
 * wire bytes with. Other packages are required as installed.
 */
export function loadUnpatchedTree<T>(pkg: string, file: string, patchName: string): T {
  const dir = packageDir(pkg);
  const patchText = readFileSync(path.join(root, "patches", patchName), "utf8");
  const loaded = new Map<string, { exports: unknown }>();
  const load = (filename: string): unknown => {
    const hit = loaded.get(filename);
    if (hit) return hit.exports;
    const mod = { exports: {} };
    loaded.set(filename, mod);
    const real = createRequire(filename);
    const local = Object.assign(
      (id: string): unknown => (id.startsWith(".") && id.endsWith(".js") ? load(real.resolve(id)) : real(id)),
      { resolve: real.resolve, cache: real.cache, main: real.main, extensions: real.extensions },
    );
    runUnpatched(pkg, patchName, patchText, filename, mod, local);
    return mod.exports;
  };
  return load(path.join(dir, file)) as T;
}
