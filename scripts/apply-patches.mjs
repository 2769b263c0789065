// Applies the patches of patches/ to the installed libraries (npm's postinstall). Each file is
// `<package>+<what>.patch` (a scope's "/" written "__"), a described unified diff against the
// package's folder, for a change the library lacks and that faxgate offers upstream: a reviewed
// file instead of a change made to the library's objects at run time (docs/dependencies.md).
// A patch already applied is left alone; one that no longer applies (the library moved) stops
// the install with its name, so an upgrade is never taken with the change silently missing.
// Applied here in plain Node rather than by patch(1), which a fresh machine may not have: the
// quick start's `npm ci` must work with Node alone. Its parser is also the differential tests'
// (test/helpers/unpatched.ts): imported, it applies nothing.
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.join(root, "patches");
const require = createRequire(path.join(root, "package.json"));

/** The installed package's folder: up from its entry point to the package.json naming it. */
export function packageDir(name) {
  let d = path.dirname(require.resolve(name));
  for (;;) {
    const pj = path.join(d, "package.json");
    if (existsSync(pj) && JSON.parse(readFileSync(pj, "utf8")).name === name) return d;
    const up = path.dirname(d);
    if (up === d) throw new Error(`cannot find the folder of ${name}`);
    d = up;
  }
}

/**
 * The patch's files and hunks: a unified diff (`--- a/...`, `+++ b/...`, `@@ ... @@`, then lines
 * starting with " ", "-" or "+"); text before the first `---` is its description.
 */
export function parsePatch(text) {
  const files = [];
  let file = null;
  let hunk = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("+++ ")) {
      file = { path: line.slice(4).split("\t")[0].replace(/^b\//, ""), hunks: [] };
      files.push(file);
      hunk = null;
    } else if (line.startsWith("--- ")) {
      hunk = null;
    } else if (file && line.startsWith("@@")) {
      hunk = { before: [], after: [] };
      file.hunks.push(hunk);
    } else if (hunk && /^[ +-]/.test(line)) {
      if (line[0] !== "+") hunk.before.push(line.slice(1));
      if (line[0] !== "-") hunk.after.push(line.slice(1));
    } else if (hunk && line === "") {
      // a blank context line whose leading space an editor took away
      hunk.before.push("");
      hunk.after.push("");
    }
  }
  return files;
}

/**
 * Applies a patch with exact context (no fuzz, no offsets beyond where the text is found):
 * 'applied', 'already' (every hunk's result is there and none of its original), or why not.
 * Nothing is written unless every hunk of every file applies.
 */
function applyPatch(dir, text) {
  const writes = [];
  let fresh = 0;
  for (const f of parsePatch(text)) {
    const target = path.join(dir, f.path);
    if (!existsSync(target)) return `no file ${f.path}`;
    let body = readFileSync(target, "utf8");
    for (const h of f.hunks) {
      const before = h.before.join("\n");
      const after = h.after.join("\n");
      if (body.includes(before)) {
        if (body.indexOf(before) !== body.lastIndexOf(before))
          return `a hunk of ${f.path} matches in more than one place`;
        body = body.replace(before, () => after);
        fresh += 1;
      } else if (!body.includes(after)) return `a hunk of ${f.path} matches nothing (the library changed)`;
    }
    writes.push([target, body]);
  }
  if (fresh === 0) return "already";
  for (const [target, body] of writes) writeFileSync(target, body);
  return "applied";
}

/** Applies every patch of patches/; 1 when one could not be applied (its name said), else 0. */
function applyAll() {
  let failed = false;
  for (const name of existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(".patch"))
        .sort()
    : []) {
    const pkg = name.slice(0, name.indexOf("+")).replace("__", "/");
    let cwd;
    try {
      cwd = packageDir(pkg);
    } catch (err) {
      console.error(`faxgate patches: ${name}: ${err.message}`);
      failed = true;
      continue;
    }
    const result = applyPatch(cwd, readFileSync(path.join(dir, name), "utf8"));
    if (result === "applied") console.log(`faxgate patches: applied ${name}`);
    else if (result !== "already") {
      console.error(`faxgate patches: ${name} does not apply to this ${pkg}: ${result}`);
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

// run as the postinstall (node scripts/apply-patches.mjs), not when imported
// (real paths: the checkout may be reached through a link)
const self = realpathSync(fileURLToPath(import.meta.url));
if (process.argv[1] && existsSync(process.argv[1]) && realpathSync(process.argv[1]) === self) process.exit(applyAll());
