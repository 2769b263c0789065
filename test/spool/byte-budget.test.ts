import { describe, expect, it } from "vitest";
import { ByteBudget } from "../../src/spool/byte-budget.js";

/** Whether a promise has settled by the time the queued callbacks have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe("ByteBudget", () => {
  it("a file waits until its bytes fit, and files go in the order they asked", async () => {
    const b = new ByteBudget(100);
    const first = await b.acquire(60);
    const big = b.acquire(50);
    const small = b.acquire(10); // would fit now, but waits behind the one that asked first
    expect(await settled(big)).toBe(false);
    expect(await settled(small)).toBe(false);
    expect(b.heldBytes).toBe(60);
    first();
    expect(await settled(big)).toBe(true);
    expect(await settled(small)).toBe(true);
    expect(b.heldBytes).toBe(60);
    (await big)();
    (await small)();
    expect(b.heldBytes).toBe(0);
  });

  it("a file larger than the whole budget goes alone, once nothing else is held", async () => {
    const b = new ByteBudget(100);
    const held = await b.acquire(30);
    const huge = b.acquire(500);
    expect(await settled(huge)).toBe(false);
    held();
    const release = await huge;
    expect(b.heldBytes).toBe(500);
    const next = b.acquire(1);
    expect(await settled(next)).toBe(false);
    release();
    release(); // a second release gives back nothing more
    (await next)();
    expect(b.heldBytes).toBe(0);
  });
});
