// The API gate's classes on their own: a dispatcher call goes before console calls already
// waiting, and the other classes together never hold the dispatcher's reserved calls at once.
import { describe, expect, it } from "vitest";
import { ApiGate, type GateClass } from "../../src/fax/api-gate.js";
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
});
