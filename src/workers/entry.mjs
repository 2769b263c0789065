// The one file every thread and child process of faxgate starts in (workers/off-thread.ts says
// how), in the built daemon (dist/) and from the TypeScript sources (tests, benches, tsx) alike.
// It loads the module named by workerData (a thread) or by its first argument (a child: the
// module then sees the rest of the command line as its own). A .ts module (the sources) is
// loaded through tsx's API: Node 20 passes no loader on to threads or children. The built
// daemon's modules are .js and never load tsx (a dev dependency).
//
// Modules named to preload are imported first, natively: tsx would otherwise transform a big
// plain-JS dependency at every start (pdfjs: its 3 MB cost a PDF reader child from the sources
// several times its start and some 200 MB), and once loaded the module's own import finds them.
import { workerData } from "node:worker_threads";

const MODULE = "faxgate:module";
const PRELOAD = "faxgate:preload";

let named;
let preload = [];
if (workerData && typeof workerData === "object" && typeof workerData[MODULE] === "string") {
  named = workerData[MODULE];
  preload = workerData[PRELOAD] ?? [];
} else {
  const args = process.argv.slice(2);
  while (args[0]?.startsWith("--preload=")) preload.push(args.shift().slice("--preload=".length));
  named = args.shift();
  // the module reads its arguments where a script of its own would find them
  process.argv = [process.argv[0], named, ...args];
}
if (typeof named !== "string") throw new Error("workers/entry.mjs starts only modules named by workers/off-thread.ts");
for (const p of preload) await import(p);
let mod;
if (!named.endsWith(".ts")) mod = await import(named);
else if (workerData) {
  // a thread: tsx's loader scoped to this import, as a thread cannot register one for itself
  mod = await (await import("tsx/esm/api")).tsImport(named, import.meta.url);
} else {
  // a child: tsx's loader for the whole process, so that the preloaded modules are the ones it finds
  (await import("tsx/esm/api")).register();
  mod = await import(named);
}
export default mod.default;
