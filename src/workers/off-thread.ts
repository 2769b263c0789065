// The one way faxgate runs its own code off the main thread, in the daemon and in tests alike: a
// module of src/, named beside its caller as `new URL('./x.js', import.meta.url)`, started in
// workers/entry.mjs, either as a thread of its own (startThread: the store's threads, each with
// its own database connection), as the file of a pool of threads (threadPool: piscina, the
// readers of hostile mail), or in child processes (childPool: where only the OS can bound what a
// document makes a library allocate, the PDF reader). The built daemon (dist/) names the
// compiled .js module; from the TypeScript sources (tests, benches, tsx) the .ts twin, which
// entry.mjs loads through tsx. No source text is ever eval'd.
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { Piscina } from "piscina";
import { ChildPool, type ChildPoolOptions } from "./child-pool.js";

export { ChildLimitError, type ChildPool, type ChildPoolOptions } from "./child-pool.js";

const fromSource = import.meta.url.endsWith(".ts");

/** The file every thread and child starts in (the same file in dist/ and src/). */
const ENTRY = fileURLToPath(new URL("./entry.mjs", import.meta.url));
/** The workerData keys entry.mjs reads. */
const MODULE = "faxgate:module";
const PRELOAD = "faxgate:preload";

/** What entry.mjs loads for `module`: the .js module as named, or its .ts twin from the sources. */
function moduleHref(module: URL): string {
  return fromSource ? module.href.replace(/\.js$/, ".ts") : module.href;
}

/** The entry file and workerData of a thread running `module` (`preload`: see entry.mjs). */
function threadStart(module: URL, preload: string[] = []): { filename: string; workerData: Record<string, unknown> } {
  return { filename: ENTRY, workerData: { [MODULE]: moduleHref(module), [PRELOAD]: preload } };
}

/** A thread of its own running `module`; `data` becomes its workerData. */
export function startThread(module: URL, data: Record<string, unknown>): Worker {
  const start = threadStart(module);
  return new Worker(start.filename, { workerData: { ...data, ...start.workerData }, execArgv: [] });
}

export interface ThreadPoolOptions {
  /** Threads at most; one stays up once started, the others leave after `idleTimeoutMs` without work. */
  maxThreads: number;
  idleTimeoutMs: number;
  /** Heap limit of each thread. */
  maxHeapMb: number;
}

/** A piscina pool whose threads run `module`'s default export for each task. */
export function threadPool(module: URL, opts: ThreadPoolOptions): Piscina {
  const start = threadStart(module);
  return new Piscina({
    filename: start.filename,
    workerData: start.workerData,
    name: "default",
    minThreads: 1,
    maxThreads: opts.maxThreads,
    idleTimeout: opts.idleTimeoutMs,
    resourceLimits: { maxOldGenerationSizeMb: opts.maxHeapMb },
  });
}

/**
 * A pool of child processes running `module` with `args` (childPool's protocol: child-pool.ts).
 * `preload`: modules (resolved URLs) loaded natively before it, see entry.mjs.
 */
export function childPool(
  module: URL,
  args: string[],
  opts: Omit<ChildPoolOptions, "argv"> & { preload?: string[] },
): ChildPool {
  const { preload = [], ...rest } = opts;
  const argv = [ENTRY, ...preload.map((p) => `--preload=${p}`), moduleHref(module), ...args];
  return new ChildPool({ ...rest, argv });
}
