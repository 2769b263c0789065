#!/usr/bin/env node
// The installed entry point: runs the compiled CLI (built by `npm ci` through the prepare script).
import { run } from "../dist/cli/main.js";

run(process.argv).catch((err) => {
  process.stderr.write(`faxgate: ${err?.message ? err.message : String(err)}\n`);
  process.exit(1);
});
