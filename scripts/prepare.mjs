// npm runs `prepare` after `npm ci` in a checkout, also with `--omit=dev`, where TypeScript (a dev
// dependency) is absent. So: build when TypeScript is there (the quick start's `npm ci && npm start`
// must build); without it, keep a built dist/ (copied in, or built before `npm prune --omit=dev`),
// and with neither, stop with what to do instead of "tsc: not found" (exit 127).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
const built = path.join(root, "dist", "cli", "main.js");

if (!existsSync(tsc)) {
  if (existsSync(built)) {
    console.log("faxgate prepare: TypeScript is not installed (production install); using the built dist/");
    process.exit(0);
  }
  console.error(
    "faxgate prepare: TypeScript is not installed and there is no built dist/.\n" +
      "Install with dev dependencies, build, then drop them:  npm ci && npm run build && npm prune --omit=dev",
  );
  process.exit(1);
}
const r = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], {
  cwd: root,
  stdio: "inherit",
});
process.exit(r.status ?? 1);
