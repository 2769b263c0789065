#!/usr/bin/env -S node --max-semi-space-size=32
// The installed entry point: runs the compiled CLI (built by `npm ci` through the prepare script).
// The first line holds the node flags, one place for every way faxgate starts: a shell and npm's
// bin link run this file, and so do systemd/faxgate.service and docker/entrypoint.sh;
// bench/lib/daemon.ts reads the line. A young generation of 32 MB (V8's default is 16) halves the
// scavenges a mail leaves (docs/bench.md, "The young generation and V8's helper threads").
import { run } from "../dist/cli/main.js";

run(process.argv).catch((err) => {
  process.stderr.write(`faxgate: ${err?.message ? err.message : String(err)}\n`);
  process.exit(1);
});
