// Periodic, the one "every N ms, one run at a time" loop: timed runs, wake(), onRunEnd, stop().
import { afterEach, describe, expect, it } from "vitest";
import { Periodic } from "../../src/periodic.js";

let loop: Periodic<number> | null = null;
afterEach(async () => {
  await loop?.stop();
  loop = null;
});

/** Timers of equal delay fire in the order they were made: this resolves after any 0 ms timer made before it. */
const afterZeroTimers = () => new Promise((r) => setTimeout(r, 0));

/** A loop with a long interval, so that every run after the first is one the test asked for. */
function counting(opts: { work?: () => Promise<void>; wakeGapMs?: number } = {}) {
  let runs = 0;
  const ended: Array<() => void> = [];
  loop = new Periodic(
    async () => {
      runs += 1;
      await opts.work?.();
      return runs;
    },
    {
      intervalMs: 60_000,
      ...(opts.wakeGapMs === undefined ? {} : { wakeGapMs: opts.wakeGapMs }),
      onError: () => undefined,
      onRunEnd: () => {
        for (const f of ended.splice(0)) f();
      },
    },
  );
  const nextEnd = () => new Promise<void>((resolve) => ended.push(resolve));
  return { loop, runs: () => runs, nextEnd };
}

describe("Periodic", () => {
  it("runs at start, and wake() brings the next run forward instead of waiting the interval", async () => {
    const c = counting();
    const first = c.nextEnd();
    c.loop.start();
    await first;
    expect(c.runs()).toBe(1);
    const second = c.nextEnd();
    c.loop.wake();
    await second;
    expect(c.runs()).toBe(2);
  });

  it("with wakeGapMs, a burst of wakes after a run is one run, no sooner than the gap after it", async () => {
    const c = counting({ wakeGapMs: 300 });
    const first = c.nextEnd();
    c.loop.start();
    await first;
    const firstEnded = performance.now();
    const second = c.nextEnd();
    for (let i = 0; i < 100; i += 1) c.loop.wake();
    await second;
    // a lower bound only: the run waited out the gap (without it, it came at the next turn)
    expect(performance.now() - firstEnded).toBeGreaterThanOrEqual(290);
    expect(c.runs()).toBe(2);
  });

  it("wake() during a run runs once more right after it, not twice at once", async () => {
    let release!: () => void;
    let inRun = 0;
    let overlap = false;
    const c = counting({
      work: async () => {
        inRun += 1;
        if (inRun > 1) overlap = true;
        if (c.runs() === 1) await new Promise<void>((r) => (release = r));
        inRun -= 1;
      },
    });
    const first = c.nextEnd();
    c.loop.start();
    while (c.runs() === 0) await new Promise((r) => setImmediate(r));
    c.loop.wake();
    c.loop.wake();
    const second = first.then(() => c.nextEnd());
    release();
    await second;
    expect(c.runs()).toBe(2);
    expect(overlap).toBe(false);
  });

  it("wake() before start() or after stop() does nothing, and stop() waits for the run in flight", async () => {
    let release!: () => void;
    let finished = false;
    const c = counting({
      work: async () => {
        await new Promise<void>((r) => (release = r));
        finished = true;
      },
    });
    c.loop.wake();
    // a run wake() scheduled would be a 0 ms timer created before this one, so it fires first
    await afterZeroTimers();
    expect(c.runs()).toBe(0);
    c.loop.start();
    while (c.runs() === 0) await new Promise((r) => setImmediate(r));
    const stopped = c.loop.stop();
    release();
    await stopped;
    expect(finished).toBe(true);
    c.loop.wake();
    await afterZeroTimers();
    expect(c.runs()).toBe(1);
  });
});
