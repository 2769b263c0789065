// The one way faxgate runs its own code off the main thread: a typed module of src/ started as
// a worker thread, either alone (startThread: the store's long-lived threads, each with its own
// database connection) or as the file of the reader pool's piscina threads (workers/pool.ts takes
// threadEntry's file and data). The built daemon runs the compiled .js file directly; from the
// TypeScript sources (tests, benches, tsx) the thread starts in workers/ts-bootstrap.mjs, which
// loads the .ts module through tsx's API (Node 20 does not pass tsx's loader on to worker
// threads). No source text is ever eval'd. The PDF reader is a child process instead
// (workers/pdf-process.ts): only the OS bounds what a decompression bomb makes pdfjs allocate.
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const fromSource = import.meta.url.endsWith(".ts");

/** The workerData key naming the .ts module for ts-bootstrap.mjs. */
export const THREAD_MODULE = "faxgate:threadModule";

/**
 * The file a thread starts in for `module` (named beside its caller as
 * `new URL('./x-thread.js', import.meta.url)`; its .ts twin is taken when running from source),
 * and the workerData that goes with it.
 */
export function threadEntry(module: URL): { filename: string; workerData: Record<string, unknown> } {
  if (!fromSource) return { filename: fileURLToPath(module), workerData: {} };
  return {
    filename: fileURLToPath(new URL("./workers/ts-bootstrap.mjs", import.meta.url)),
    workerData: { [THREAD_MODULE]: module.href.replace(/\.js$/, ".ts") },
  };
}

/** A thread of its own running `module`; `data` becomes its workerData. */
export function startThread(module: URL, data: Record<string, unknown>): Worker {
  const entry = threadEntry(module);
  return new Worker(entry.filename, { workerData: { ...data, ...entry.workerData }, execArgv: [] });
}
