// Clean-ups that belong to the test file being run rather than to one test: shared helpers (the
// spool harness's reader pool) register here, and test/setup-file.ts runs them after each file.
// A helper module cannot call afterAll itself: with isolate: false (vitest.config.ts) it is loaded
// once per worker, so its afterAll would belong to the first file only.
const cleanups = new Set<() => Promise<void> | void>();

/** Runs `fn` once, after the test file now running (or in its afterAll, if already there). */
export function afterThisFile(fn: () => Promise<void> | void): void {
  cleanups.add(fn);
}

export async function runFileCleanups(): Promise<void> {
  const all = [...cleanups];
  cleanups.clear();
  for (const fn of all) await fn();
}
