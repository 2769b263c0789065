// The dispatcher against the emulator's readings of the real service (offset as pages or records,
// cf kept/dropped/empty, both per-recipient error shapes, the history rate limit, revoked keys),
// over real HTTPS with a real store. Each test counts the faxes at the service itself.
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/clock.js";
import type { ApiConfig, QueueConfig } from "../../src/config/schema.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import { ApiGate } from "../../src/fax/api-gate.js";
import { checkKey } from "../../src/fax/check-key.js";
import type { FaxClient } from "../../src/fax/client.js";
import { createLogger } from "../../src/log/logger.js";
import type { SqliteStore } from "../../src/store/sqlite/store.js";
import { clientFor, closeClients, emulatorCall } from "../helpers/client.js";
import { startTestEmulator, TEST_KEYS, type TestEmulatorOptions } from "../helpers/emulator.js";
import { newJob, steppedClock, tempStore, type TempStore } from "../helpers/store.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { EMU_KEY } from "./emulator-facts.js";
import { drain, serviceFaxes, TEST_QUEUE_TIMINGS } from "./rig.js";
import { waitUntil } from "../helpers/wait.js";
import { testDispatcher } from "../helpers/collaborators.js";

type Emu = Awaited<ReturnType<typeof startTestEmulator>>;

let emu: Emu | null = null;
let t: TempStore | null = null;
afterEach(async () => {
  await disposeEmulatorAndStore(emu, t);
  emu = null;
  t = null;
});

interface Setup {
  store: SqliteStore;
  dispatcher: Dispatcher;
  logs: Array<Record<string, unknown>>;
  /** the client the dispatcher uses; tests may swap it (a replaced key) */
  use(token: string): void;
  /** the store's and the dispatcher's clock: leases and graces run out when a test steps it */
  clock: Clock & { advance(ms: number): void };
}

async function setup(
  opts: {
    emulator?: TestEmulatorOptions;
    queue?: Partial<QueueConfig>;
    api?: Partial<ApiConfig>;
    gate?: ApiGate;
    dispatcherSeesGate?: boolean;
    clock?: Clock & { advance(ms: number): void };
  } = {},
): Promise<Setup> {
  const clock = opts.clock ?? steppedClock();
  emu = await startTestEmulator({ delayMs: 50, ...opts.emulator });
  t = tempStore({ clock });
  const logs: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: "info",
    destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
  });
  let client: FaxClient = clientFor(emu, EMU_KEY, undefined, { gate: opts.gate });
  const dispatcher = testDispatcher({
    store: t.store,
    clientFor: () => client,
    api: { baseUrl: emu.baseUrl, concurrency: 8, ratePerSecond: 1000, ...opts.api },
    queue: { ...TEST_QUEUE_TIMINGS, ...opts.queue },
    logger,
    gate: opts.dispatcherSeesGate ? opts.gate : undefined,
    clock,
  });
  return {
    store: t.store,
    dispatcher,
    logs,
    clock,
    use: (token) => (client = clientFor(emu!, token, undefined, { gate: opts.gate })),
  };
}

/**
 * A process claimed what is queued, let its call leave (markCallLeaving) and died before the
 * request reached the service: the service has no such fax, and nothing here can prove it. (A
 * process that died before its call left puts the send back in the queue: crash.test.ts.) The
 * first pass finds the lease expired; the lookup waits the grace from then, not from the send,
 * and the second pass makes it.
 */
async function diedBeforeTheSend(s: Setup): Promise<void> {
  for (const g of await s.store.claimDue("dead-process", 5, 1))
    await s.store.markCallLeaving(
      "dead-process",
      g.sendId,
      g.recipients.map((r) => ({ jobId: r.jobId, idx: r.idx })),
    );
  // the lease runs out
  s.clock.advance(150);
  await s.dispatcher.runOnce();
  // the reconcile grace passes
  s.clock.advance(150);
  await s.dispatcher.runOnce();
}

/** How many faxes the service made to each number. */
async function perNumber(): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  for (const f of await serviceFaxes(emu!)) m.set(f.faxNumber, (m.get(f.faxNumber) ?? 0) + 1);
  return m;
}

describe("every reading of the service: faxes delivered once each", () => {
  const matrix: Array<
    [TestEmulatorOptions["offsetMode"], TestEmulatorOptions["cfMode"], TestEmulatorOptions["recipientErrorShape"]]
  > = [];
  for (const offsetMode of ["pages", "records"] as const) {
    for (const cfMode of ["kept", "dropped", "empty"] as const) {
      for (const shape of ["input", "recipientFax"] as const) matrix.push([offsetMode, cfMode, shape]);
    }
  }
  it.each(matrix)("offset %s, cf %s, recipient errors %s", async (offsetMode, cfMode, recipientErrorShape) => {
    // pages of 2 records: following 6 faxes walks several history pages in the emulator's offset mode
    const s = await setup({
      emulator: { offsetMode, cfMode, recipientErrorShape, delayMs: 150 },
      queue: { historyPageSize: 2 },
    });
    const singles: string[] = [];
    for (let i = 0; i < 6; i++) {
      const number = `+1555610${String(2000 + i)}`;
      singles.push(number);
      await s.store.enqueue(newJob(t!.dir, { recipients: [{ number }] }));
    }
    const { job: many } = await s.store.enqueue(
      newJob(t!.dir, { recipients: [{ number: "+15556103000" }, { number: "+15556103001" }, { number: "+1555" }] }),
    );
    await drain(s);
    const counts = await perNumber();
    for (const n of [...singles, "+15556103000", "+15556103001"]) expect([n, counts.get(n)]).toEqual([n, 1]);
    for (const j of await s.store.listJobs()) {
      if (j.id === many.id) continue;
      expect([j.id, j.state]).toEqual([j.id, "delivered"]);
    }
    const m = (await s.store.getJob(many.id))!;
    expect(m.recipients.map((r) => r.state)).toEqual(["delivered", "delivered", "failed"]);
    // the service's own words reach the reason, whichever shape it used
    expect(m.recipients[2]!.lastError).toMatch(/InvalidInputError: .*not valid/);
  });
});

describe("results the real service reports", () => {
  it("a busy line (6100) is tried up to maxFaxTries, an unknown code gets one more try and is reported in its own words", async () => {
    const s = await setup({ queue: { maxFaxTries: 3 } });
    const { job: busy } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556200000" }] }));
    const { job: odd } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556200007" }] }));
    const { job: blocked } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556200005" }] }));
    await drain(s);
    const counts = await perNumber();
    expect(counts.get("+15556200000")).toBe(3);
    expect((await s.store.getJob(busy.id))!.recipients[0]).toMatchObject({
      state: "failed",
      lastError: "busy (3 tries)",
    });
    // 7734 "Carrier Route Withdrawn": no rule knows it, so one more try (default), then its words
    expect(counts.get("+15556200007")).toBe(2);
    expect((await s.store.getJob(odd.id))!.recipients[0]!.lastError).toMatch(/"Carrier Route Withdrawn".*7734/);
    // 5100 "Fax Request Blocked" is final at once
    expect(counts.get("+15556200005")).toBe(1);
    expect((await s.store.getJob(blocked.id))!.recipients[0]!.state).toBe("failed");
  });

  it("a busy line is retried and delivered when the line frees up, the busy try counted and reported", async () => {
    // ending 0010: the account's first fax to the number is busy (6100), later ones go through
    const s = await setup({ queue: { maxFaxTries: 3 } });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556220010" }] }));
    await drain(s);
    const faxes = (await serviceFaxes(emu!)).filter((f) => f.faxNumber === "+15556220010");
    expect(faxes.map((f) => f.status).sort()).toEqual(["failed", "success"]);
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("delivered");
    // two sends, one of them a failed fax try (the busy one)
    expect(r.attempts).toBe(2);
    expect(r.faxTries).toBe(1);
  });

  it("an operator rule makes a result final or retried", async () => {
    const s = await setup({
      queue: {
        resultRules: [{ text: "route withdrawn", action: "fail", words: "the carrier no longer routes this number" }],
      },
    });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556210007" }] }));
    await drain(s);
    expect((await perNumber()).get("+15556210007")).toBe(1);
    expect((await s.store.getJob(job.id))!.recipients[0]!.lastError).toBe("the carrier no longer routes this number");
  });
});

describe("exactly once without trusting cf", () => {
  it("a lost answer with cf dropped is found by number and time and faxed once", async () => {
    const s = await setup({ emulator: { cfMode: "dropped" } });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 1 });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556300123" }] }));
    await s.dispatcher.runOnce();
    expect((await s.store.getJob(job.id))!.recipients[0]!.state).toBe("unknown");
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 0 });
    // the reconcile grace passes
    s.clock.advance(150);
    await drain(s);
    expect((await s.store.getJob(job.id))!.recipients[0]!.state).toBe("delivered");
    expect((await perNumber()).get("+15556300123")).toBe(1);
    expect(s.logs.some((l) => String(l.msg).startsWith("RECONCILED fax found") && l.how === "number and time")).toBe(
      true,
    );
  });

  it("a lost answer to a multi-recipient send with cf empty: each destination once", async () => {
    const s = await setup({ emulator: { cfMode: "empty", variant: "b" } });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 1 });
    const numbers = ["+15556311001", "+15556311002", "+15556311003"];
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: numbers.map((number) => ({ number })) }));
    await s.dispatcher.runOnce();
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 0 });
    // the reconcile grace passes
    s.clock.advance(150);
    await drain(s);
    expect((await s.store.getJob(job.id))!.recipients.map((r) => r.state)).toEqual([
      "delivered",
      "delivered",
      "delivered",
    ]);
    const counts = await perNumber();
    for (const n of numbers) expect(counts.get(n)).toBe(1);
  });

  it("when it cannot decide, it parks the recipient as unknown, tells the operator and never sends", async () => {
    const s = await setup({ emulator: { cfMode: "dropped" } });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556320777" }] }));
    // with cf dropped nothing can prove the send never happened
    await diedBeforeTheSend(s);
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("unknown");
    expect(r.lastError).toMatch(/^parked: /);
    expect((await perNumber()).get("+15556320777")).toBeUndefined();
    expect(s.logs.filter((l) => String(l.msg).startsWith("UNKNOWN send parked"))).toHaveLength(1);
    const alerts = await s.store.listNotifications({ kind: "alert" });
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.jobId).toBe(job.id);
  });

  it("a parked send stays unsent at its hourly look, even once the account is seen keeping cf", async () => {
    const s = await setup({ emulator: { cfMode: "kept" } });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556330888" }] }));
    // on a new gateway: no fax of ours has shown cf yet
    await diedBeforeTheSend(s);
    expect((await s.store.getJob(job.id))!.recipients[0]!.lastError).toMatch(/^parked: /);
    // another fax goes through and its record carries our cf: the account keeps it
    const other = (await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15556330999" }] }))).job;
    await waitUntil(
      async () => {
        if ((await s.store.getJob(other.id))!.state === "delivered") return true;
        await s.dispatcher.runOnce();
        return false;
      },
      "the second fax delivered",
      20_000,
      40,
    );
    expect(await s.store.getState("service:cf-echo")).toBe("kept");
    // an hour later the parked send is looked at again: still no such fax, and the user was told
    // it would not be sent again by itself
    s.clock.advance(2 * 3_600_000);
    await s.dispatcher.runOnce();
    // the reconcile grace passes
    s.clock.advance(150);
    await s.dispatcher.runOnce();
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(s.logs.some((l) => l.msg === "RECONCILED no fax at the service, sending again")).toBe(false);
    expect(r.state).toBe("unknown");
    expect(r.lastError).toMatch(/^parked: still no fax to this number/);
    expect((await perNumber()).get("+15556330888")).toBeUndefined();
    expect(await s.store.listNotifications({ kind: "alert" })).toHaveLength(1);
  });
});

describe("living within the history limit", () => {
  it("a 429 storm on history: calls wait for the window and every result still arrives", async () => {
    // The emulator's minute and ours both run 30 times faster than the wall clock.
    const t0 = Date.now();
    const fast = { now: () => t0 + (Date.now() - t0) * 30 };
    const gate = new ApiGate({
      ratePerSecond: 1000,
      concurrency: Number.POSITIVE_INFINITY,
      dispatchShare: 0.5,
      historyPerMinute: 8,
      now: fast.now,
      sleep: (ms) => sleep(Math.ceil(ms / 30)),
    });
    for (const retryAfter of [false, true]) {
      // 3 a minute at the service but 8 in our budget: the service refuses and we must wait it out
      // faxes take a minute (2 s of wall clock): several polls, each walking pages of 2 records
      const s = await setup({
        emulator: { historyPerMinute: 2, historyRetryAfter: retryAfter, clock: fast, delayMs: 60_000 },
        queue: { historyPageSize: 2 },
        gate,
      });
      const numbers = Array.from({ length: 8 }, (_, i) => `+1555640${String(1000 + i)}`);
      for (const number of numbers) await s.store.enqueue(newJob(t!.dir, { recipients: [{ number }] }));
      const refusedBefore = gate.historyRefused;
      await drain(s, { maxMs: 60_000 });
      expect((await s.store.listJobs()).map((j) => j.state)).toEqual(numbers.map(() => "delivered"));
      expect(gate.historyRefused).toBeGreaterThan(refusedBefore);
      const counts = await perNumber();
      for (const n of numbers) expect(counts.get(n)).toBe(1);
      await closeClients(emu!);
      await emu!.stop();
      t!.cleanup();
      emu = null;
      t = null;
    }
  });

  it("our own budget keeps history calls under the limit (fax-info meanwhile): no 429 at all", async () => {
    const t0 = Date.now();
    const fast = { now: () => t0 + (Date.now() - t0) * 30 };
    const gate = new ApiGate({
      ratePerSecond: 1000,
      concurrency: Number.POSITIVE_INFINITY,
      dispatchShare: 0.5,
      historyPerMinute: 3,
      now: fast.now,
      sleep: (ms) => sleep(Math.ceil(ms / 30)),
    });
    const s = await setup({
      emulator: { historyPerMinute: 3, clock: fast, delayMs: 60_000 },
      queue: { historyPageSize: 2 },
      gate,
      dispatcherSeesGate: true,
    });
    for (let i = 0; i < 6; i++)
      await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: `+1555650${String(1000 + i)}` }] }));
    await drain(s, { maxMs: 60_000 });
    expect((await s.store.counts()).recipients.delivered).toBe(6);
    expect(gate.historyMade).toBeGreaterThanOrEqual(3);
    expect(gate.historyRefused).toBe(0);
  });
});

describe("a revoked key holds, it does not fail", () => {
  it("holds the user's faxes, tells the operator once, and resumes when a working key is loaded", async () => {
    const s = await setup({ queue: { keyRecheck: 60_000 } });
    const admin = clientFor(emu!, TEST_KEYS.admin);
    const me = await clientFor(emu!, EMU_KEY).me();
    const keys = await admin.listApiKeys(me.userId);
    const old = keys.find((k) => k.token === EMU_KEY);
    expect(old).toBeDefined();
    expect(await checkKey(clientFor(emu!, EMU_KEY))).toMatchObject({ ok: true, userId: me.userId });
    await admin.deleteApiKey(old!.uuid);
    expect(await checkKey(clientFor(emu!, EMU_KEY))).toMatchObject({ ok: false, refused: true });

    const jobs = [];
    for (let i = 0; i < 3; i++)
      jobs.push(
        (await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: `+1555660${String(1000 + i)}` }] }))).job.id,
      );
    await s.dispatcher.runOnce();
    await s.dispatcher.runOnce();
    for (const id of jobs) {
      const r = (await s.store.getJob(id))!.recipients[0]!;
      expect([r.state, r.attempts]).toEqual(["deferred", 0]);
      expect(r.lastError).toMatch(/^held until a working API key is loaded: /);
    }
    expect(s.dispatcher.holds.isHeld("alice")).toBe(true);
    expect(s.logs.filter((l) => String(l.msg).startsWith("KEY REFUSED"))).toHaveLength(1);
    expect(await s.store.listNotifications({ kind: "alert" })).toHaveLength(1);
    expect(await serviceFaxes(emu!)).toHaveLength(0);

    // The operator loads a new key (SIGHUP or rotation): the held faxes go out at once.
    const fresh = await admin.createApiKey({ name: "replacement", userId: me.userId, access: "base" });
    s.use(fresh.token!);
    await s.dispatcher.keysChanged();
    await drain(s, { maxMs: 10_000 });
    for (const id of jobs) expect((await s.store.getJob(id))!.state).toBe("delivered");
    expect(s.dispatcher.holds.isHeld("alice")).toBe(false);
    expect((await serviceFaxes(emu!)).length).toBe(3);
  });
});

describe("history paging whichever way offset counts", () => {
  it.each(["pages", "records"] as const)(
    "offset as %s: every record once, at most one call more than the pages",
    async (offsetMode) => {
      emu = await startTestEmulator({ offsetMode, delayMs: 50 });
      const sender = clientFor(emu, EMU_KEY);
      const numbers = Array.from({ length: 11 }, (_, i) => `+1555670${String(1000 + i)}`);
      await sender.sendFaxToMany({ recipientFax: numbers, coverPage: true });
      let calls = 0;
      const walker = clientFor(emu, EMU_KEY, undefined, { observer: (op) => void (op === "history" && calls++) });
      const seen: string[] = [];
      for await (const f of walker.historyAll({ direction: "outbound", limit: 3 })) seen.push(f.faxNumber!);
      expect([...seen].sort()).toEqual([...numbers].sort());
      expect(calls).toBeLessThanOrEqual(Math.ceil(11 / 3) + 1);
    },
  );
});
