// The one retry schedule of faxgate: the dispatcher's sends and the notifier's mails both wait
// `steps[n-1]` (the last step repeating) spread by jitter, so that work deferred together does
// not all come back in the same second. Randomness is injected so tests can pin it.

export interface Jitter {
  /** Lowest and highest multiple of the step, e.g. [0.8, 1.2] for +-20 %. */
  spread: readonly [number, number];
  /** Math.random by default. */
  random?: () => number;
}

/** Milliseconds before the n-th retry (1-based) on `stepsMs`, the last step repeating. */
export function retryDelayMs(stepsMs: readonly number[], n: number, jitter: Jitter): number {
  if (stepsMs.length === 0) throw new Error("a retry schedule needs at least one step");
  const step = stepsMs[Math.min(Math.max(Math.floor(n), 1), stepsMs.length) - 1]!;
  const [lo, hi] = jitter.spread;
  const r = (jitter.random ?? Math.random)();
  return Math.round(step * (lo + (hi - lo) * Math.min(Math.max(r, 0), 1)));
}
