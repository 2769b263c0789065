// The one way a part of faxgate starts a thread of its own: a typed module of src/ run as a
// worker thread (the reader pool's piscina threads load theirs the same way, pool.ts). The built
// daemon runs the compiled .js file directly; from the TypeScript sources (tests, benches, tsx)
// the thread starts in ts-bootstrap.mjs, which loads the .ts module through tsx's API (Node 20
// does not pass tsx's loader on to worker threads). No source text is ever eval'd.
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const fromSource = import.meta.url.endsWith(".ts");

/**
 * `module`: the thread's module, named beside its caller as
 * `new URL('./x-thread.js', import.meta.url)` (its .ts twin is taken when running from source).
 * `data` becomes the thread's workerData.
 */
export function startThread(module: URL, data: Record<string, unknown>): Worker {
  if (!fromSource) return new Worker(module, { workerData: data, execArgv: [] });
  const ts = new URL(module.href.replace(/\.js$/, ".ts"));
  return new Worker(fileURLToPath(new URL("./workers/ts-bootstrap.mjs", import.meta.url)), {
    workerData: { ...data, [THREAD_MODULE]: ts.href },
    execArgv: [],
  });
}

/** The workerData key naming the .ts module for ts-bootstrap.mjs. */
export const THREAD_MODULE = "faxgate:threadModule";
