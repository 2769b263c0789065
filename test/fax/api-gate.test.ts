// The API gate's classes on their own: a dispatcher call goes before console calls already
// waiting, and the other classes together never hold the dispatcher's reserved calls at once.
import { describe, expect, it } from "vitest";
import { ApiGate, MIN_PACE, PACE_HOLD_MS, type GateClass } from "../../src/fax/api-gate.js";
import { waitUntil } from "../helpers/wait.js";

describe("the API gate", () => {
  it("lets a dispatcher call pass console calls that wait for the rate", async () => {
    const gate = new ApiGate({ ratePerSecond: 50, concurrency: 4, dispatchShare: 0.5, historyPerMinute: 8 });
    const order: GateClass[] = [];
    const call = (cls: GateClass) =>
      gate.admit("listContacts", cls).then((release) => {
        order.push(cls);
        release();
      });
    const burst = Array.from({ length: 20 }, () => call("console"));
    // the dispatcher's send arrives once the console calls are queued
    await new Promise((r) => setImmediate(r));
    await Promise.all([call("dispatch"), ...burst]);
    // at most the console call already let through, then the send
    expect(order.indexOf("dispatch")).toBeLessThanOrEqual(1);
    expect(gate.admitted).toMatchObject({ dispatch: 1, console: 20 });
  });

  it("never lets the other classes hold the calls reserved for the dispatcher", async () => {
    const gate = new ApiGate({ ratePerSecond: 1000, concurrency: 4, dispatchShare: 0.5, historyPerMinute: 8 });
    // console and background calls that never end: only two of them are let out
    const held: Array<() => void> = [];
    const others = [...Array.from({ length: 3 }, () => "console" as const), "background" as const].map((cls) =>
      gate.admit("me", cls).then((r) => void held.push(r)),
    );
    // fixed wait on purpose: negative check: no third call is let out meanwhile
    await new Promise((r) => setTimeout(r, 50));
    expect(held).toHaveLength(2);
    // the background call, asked last, passed the console calls waiting for the rate
    expect(gate.waitingCalls()).toMatchObject({ console: 2, background: 0 });
    expect(gate.admitted).toMatchObject({ console: 1, background: 1 });
    // the dispatcher still gets its two at once
    const sends = await Promise.all([gate.admit("sendFax", "dispatch"), gate.admit("sendFax", "dispatch")]);
    expect(gate.admitted.dispatch).toBe(2);
    // a place of the others' comes free: the next console call takes it
    held.shift()!();
    await waitUntil(() => gate.waitingCalls().console === 1, "the next console call let out", 5000, 5);
    expect(gate.waitingCalls()).toMatchObject({ console: 1 });
    for (const r of [...held, ...sends]) r();
    await Promise.all(others);
    expect(gate.admitted).toMatchObject({ dispatch: 2, console: 3, background: 1 });
  });

  it("slows down on a 429, waits out its Retry-After, and comes back to the configured rate in calm", async () => {
    // a clock the test moves: sleeping moves it, so the gate's waits are read off it
    let now = 0;
    const paces: Array<[number, string]> = [];
    const gate = new ApiGate({
      ratePerSecond: 10,
      concurrency: 4,
      dispatchShare: 0.5,
      historyPerMinute: 8,
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
      onPaceChange: (rate, why) => paces.push([rate, why]),
    });
    const call = async (answer?: { rateLimited: true; retryAfterMs?: number }): Promise<number> => {
      (await gate.admit("sendFax", "dispatch"))(answer);
      return now;
    };
    await call();
    expect(gate.currentRate()).toBe(10);
    // a 429 with Retry-After 2 s: half the rate, and the next call of any class waits the 2 s
    const refusedAt = now;
    await call({ rateLimited: true, retryAfterMs: 2000 });
    expect(gate.currentRate()).toBe(5);
    expect(await call()).toBeGreaterThanOrEqual(refusedAt + 2000);
    // that call came after a calm second: a tenth of the rate back
    expect(gate.currentRate()).toBe(6);
    // the 429s of calls that were out together count once: one at once after a change does nothing
    await call({ rateLimited: true });
    expect(gate.currentRate()).toBe(6);
    // a run of them, a second apart, goes down to the floor and no further
    for (let i = 0; i < 8; i += 1) {
      now += PACE_HOLD_MS;
      await call({ rateLimited: true });
    }
    expect(gate.currentRate()).toBeCloseTo(10 * MIN_PACE);
    expect(gate.rateRefused).toBe(10);
    // calls at the floor's pace are spaced at least as the floor's rate says
    const a = await call();
    const b = await call();
    expect(b - a).toBeGreaterThanOrEqual(Math.floor(1000 / (10 * MIN_PACE)) - 1);
    // calm seconds give a tenth of the rate back each, up to the configured rate
    for (let i = 0; i < 12; i += 1) {
      now += PACE_HOLD_MS;
      await call();
    }
    expect(gate.currentRate()).toBe(10);
    expect(paces.filter(([, why]) => why === "429").length).toBe(5);
    expect(paces.at(-1)).toEqual([10, "calm"]);
  });

  it("leaves history's own 429 handling to its budget (no slow-down of the other calls)", async () => {
    const gate = new ApiGate({ ratePerSecond: 10, concurrency: 4, dispatchShare: 0.5, historyPerMinute: 8 });
    (await gate.admit("history", "background"))({ rateLimited: true });
    expect(gate.currentRate()).toBe(10);
  });
});
