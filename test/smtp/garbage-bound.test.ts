// The receiver's garbage bound (src/garbage-bound.ts): a full collection once the Buffers hold more
// than the budget over what was alive after the last one, looked at every few megabytes taken in.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { FROM_MESSAGE_BYTES, GarbageBound, fullCollection } from '../../src/garbage-bound.js';

const MB = 1024 * 1024;
/** A message well past the size from which its bytes count (FROM_MESSAGE_BYTES). */
const BIG = 1000 * MB;

/** A bound over a pretend Buffer count, so each decision can be seen. */
function rig(budgetMb: number, everyMb: number) {
  const state = { buffers: 10 * MB, collected: 0, liveAfterCollect: 10 * MB };
  const bound = new GarbageBound({
    budgetBytes: budgetMb * MB,
    checkEveryBytes: everyMb * MB,
    bufferBytes: () => state.buffers,
    collect: () => {
      state.collected += 1;
      state.buffers = state.liveAfterCollect;
    },
  });
  return { state, bound };
}

describe('GarbageBound', () => {
  it('collects once the Buffers are over the budget above the last live count, and not before', () => {
    const { state, bound } = rig(8, 2);
    // 6 MB of garbage over the floor of 10 MB: under the budget
    state.buffers = 16 * MB;
    bound.took(2 * MB, BIG);
    expect(state.collected).toBe(0);
    // 9 MB over: collected, and the floor is what was alive after it
    state.buffers = 19 * MB;
    state.liveAfterCollect = 12 * MB;
    bound.took(2 * MB, BIG);
    expect(state.collected).toBe(1);
    expect(bound.collections).toBe(1);
    // 7 MB over the new floor (12): not yet
    state.buffers = 19 * MB;
    bound.took(2 * MB, BIG);
    expect(state.collected).toBe(1);
    state.buffers = 21 * MB;
    bound.took(2 * MB, BIG);
    expect(state.collected).toBe(2);
  });

  it('looks only every checkEveryBytes taken in', () => {
    const { state, bound } = rig(1, 4);
    state.buffers = 100 * MB;
    bound.took(1 * MB, BIG);
    bound.took(2 * MB, BIG);
    expect(state.collected).toBe(0);
    bound.took(1 * MB, BIG);
    expect(state.collected).toBe(1);
  });

  it('takes a drop in the Buffers (V8 collected on its own) as the new floor', () => {
    const { state, bound } = rig(8, 1);
    state.buffers = 4 * MB;
    bound.took(1 * MB, BIG);
    // 9 MB over the 4 MB seen last: collected, though only 3 MB over the first floor of 10 MB
    state.buffers = 13 * MB;
    bound.took(1 * MB, BIG);
    expect(state.collected).toBe(1);
  });

  it("counts a message's bytes only past FROM_MESSAGE_BYTES: small mails never set it off", () => {
    const { state, bound } = rig(1, 2);
    state.buffers = 100 * MB;
    // a thousand small messages' chunks: nothing counted, nothing looked at
    for (let i = 0; i < 1000; i++) bound.took(64 * 1024, FROM_MESSAGE_BYTES);
    expect(state.collected).toBe(0);
    // a message crossing the line: only its bytes past it count (1.5 MB of these 2 MB)
    bound.took(2 * MB, FROM_MESSAGE_BYTES + 1.5 * MB);
    expect(state.collected).toBe(0);
    bound.took(0.5 * MB, FROM_MESSAGE_BYTES + 2 * MB);
    expect(state.collected).toBe(1);
  });

  it('does nothing without a collector', () => {
    let looked = 0;
    const bound = new GarbageBound({ collect: null, checkEveryBytes: 1, bufferBytes: () => (looked += 1) * 1e9 });
    bound.took(10 * MB, BIG);
    bound.took(10 * MB, BIG);
    expect(looked).toBe(0);
    expect(bound.collections).toBe(0);
  });
});

describe('fullCollection', () => {
  it("is V8's full collection: dropped Buffers are freed by it", async () => {
    const gc = fullCollection();
    expect(gc).toBeTypeOf('function');
    gc!();
    // 40 MB held, then let go: below V8's own external-memory trigger, so nothing else frees them
    let held: Buffer[] | null = Array.from({ length: 40 }, () => Buffer.alloc(MB, 1));
    const holding = process.memoryUsage().arrayBuffers;
    expect(held.length).toBe(40);
    held = null;
    gc!();
    // V8 frees the Buffers' memory on a sweeper thread, which ends some milliseconds after gc()
    const deadline = Date.now() + 5_000;
    while (holding - process.memoryUsage().arrayBuffers < 35 * MB && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(holding - process.memoryUsage().arrayBuffers).toBeGreaterThanOrEqual(35 * MB);
  });

  it('takes gc without leaving --expose-gc set, or gc on the global object', async () => {
    // whatever earlier files in this worker did, the flag is off to begin with
    v8.setFlagsFromString('--no-expose-gc');
    expect(runInNewContext('typeof gc')).toBe('undefined');
    const globalBefore = typeof (globalThis as { gc?: unknown }).gc;
    const fresh = await freshFullCollection();
    expect(fresh()).toBeTypeOf('function');
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe(globalBefore);
  });

  it('takes gc as it is where the flag is set already, and leaves it set', async () => {
    v8.setFlagsFromString('--expose-gc');
    try {
      const fresh = await freshFullCollection();
      expect(fresh()).toBeTypeOf('function');
      expect(runInNewContext('typeof gc')).toBe('function');
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  });
});

/** fullCollection from a fresh copy of the module: the copy the test files share may have its gc already. */
async function freshFullCollection(): Promise<typeof fullCollection> {
  vi.resetModules();
  return (await import('../../src/garbage-bound.js')).fullCollection;
}
