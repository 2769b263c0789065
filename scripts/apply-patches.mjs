// Applies the patches of patches/ to the installed libraries (npm's postinstall). Each file is
// `<package>+<what>.patch` (a scope's "/" written "__"), a described unified diff against the
// package's folder, for a change the library lacks and that faxgate offers upstream: a reviewed
// file instead of a change made to the library's objects at run time (docs/dependencies.md).
// A patch already applied is left alone; one that no longer applies (the library moved) stops
// the install with its name, so an upgrade is never taken with the change silently missing.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'patches');
const require = createRequire(path.join(root, 'package.json'));

/** The installed package's folder: up from its entry point to the package.json naming it. */
function packageDir(name) {
  let d = path.dirname(require.resolve(name));
  for (;;) {
    const pj = path.join(d, 'package.json');
    if (existsSync(pj) && JSON.parse(readFileSync(pj, 'utf8')).name === name) return d;
    const up = path.dirname(d);
    if (up === d) throw new Error(`cannot find the folder of ${name}`);
    d = up;
  }
}

const patch = (cwd, file, args) => spawnSync('patch', ['-p1', '-s', '-f', '-d', cwd, '-i', file, ...args], { encoding: 'utf8' });

let failed = false;
for (const name of existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.patch')).sort() : []) {
  const pkg = name.slice(0, name.indexOf('+')).replace('__', '/');
  const file = path.join(dir, name);
  let cwd;
  try {
    cwd = packageDir(pkg);
  } catch (err) {
    console.error(`faxgate patches: ${name}: ${err.message}`);
    failed = true;
    continue;
  }
  if (patch(cwd, file, ['-R', '--dry-run']).status === 0) continue;
  const r = patch(cwd, file, ['-N']);
  if (r.error) {
    console.error(`faxgate patches: cannot run patch(1) (${r.error.message}); install it (Debian: apt-get install patch)`);
    process.exit(1);
  }
  if (r.status !== 0) {
    console.error(`faxgate patches: ${name} does not apply to this ${pkg}:\n${r.stdout}${r.stderr}`);
    failed = true;
  } else console.log(`faxgate patches: applied ${name}`);
}
process.exit(failed ? 1 : 0);
