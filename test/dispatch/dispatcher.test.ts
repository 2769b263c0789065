// The dispatcher against the emulator over real HTTPS, with a real store in a temp folder.
import { afterEach, describe, expect, it } from "vitest";
import type { ApiConfig, QueueConfig } from "../../src/config/schema.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import type { FaxApi } from "../../src/fax/types.js";
import { createLogger } from "../../src/log/logger.js";
import type { SqliteStore } from "../../src/store/sqlite/store.js";
import { clientFor, emulatorCall } from "../helpers/client.js";
import { startTestEmulator, TEST_TAGS } from "../helpers/emulator.js";
import { newJob, steppedClock, tempStore, type TempStore } from "../helpers/store.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { waitUntil, when } from "../helpers/wait.js";
import { EMU_KEY, type EmulatedFax } from "./emulator-facts.js";
import { drain, serviceFaxes, TEST_QUEUE_TIMINGS } from "./rig.js";
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
  calls: Map<string, number>;
  /** the dispatcher's log lines, parsed */
  logs: Array<Record<string, unknown>>;
  /** Resolves once `n` more timed passes have ended. */
  passes: (n: number) => Promise<void>;
  /** the timed passes ended so far */
  passCount: () => number;
  /** the store's and the dispatcher's clock: leases and graces run out when a test steps it */
  clock: ReturnType<typeof steppedClock>;
}

/** A counting FaxApi around the real client, so tests can say how many calls of which kind were made. */
function counting(api: FaxApi, calls: Map<string, number>): FaxApi {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function setup(
  opts: { delayMs?: number; variant?: "a" | "b"; queue?: Partial<QueueConfig>; api?: Partial<ApiConfig> } = {},
): Promise<Setup> {
  emu = await startTestEmulator({ delayMs: opts.delayMs ?? 50, variant: opts.variant });
  const clock = steppedClock();
  t = tempStore({ clock });
  const calls = new Map<string, number>();
  const logs: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: "info",
    destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
  });
  const client = counting(clientFor(emu, EMU_KEY, opts.variant), calls);
  const passListeners = new Set<() => void>();
  let passCount = 0;
  const passes = (n: number): Promise<void> => {
    const target = passCount + n;
    return when(
      () => passCount >= target,
      (l) => {
        passListeners.add(l);
        return () => passListeners.delete(l);
      },
      `${n} dispatcher passes`,
    );
  };
  const dispatcher = testDispatcher({
    clock,
    onPassEnd: () => {
      passCount += 1;
      for (const l of [...passListeners]) l();
    },
    store: t.store,
    clientFor: () => client,
    api: { baseUrl: emu.baseUrl, concurrency: 8, ratePerSecond: 1000, ...opts.api },
    queue: { ...TEST_QUEUE_TIMINGS, ...opts.queue },
    logger,
  });
  return { store: t.store, dispatcher, calls, logs, passes, passCount: () => passCount, clock };
}

describe("Dispatcher with the emulator", () => {
  it("sends, follows and records a delivered fax, with the job and send ids in cf", async () => {
    const s = await setup();
    const { job } = await s.store.enqueue(
      newJob(t!.dir, {
        recipients: [{ number: "+15557770123", name: "Dr. Who" }],
        cover: { enabled: true, subject: "Hello" },
        tags: [TEST_TAGS.billing, "invoices"],
      }),
    );
    await drain(s);
    const done = (await s.store.getJob(job.id))!;
    const r = done.recipients[0]!;
    expect([done.state, r.lastError]).toEqual(["delivered", null]);
    expect(r).toMatchObject({ state: "delivered", attempts: 1, resultCode: "0", faxAttempt: 1 });
    expect(r.pages).toBeGreaterThan(0);
    expect(r.duration).toBeGreaterThan(0);
    const faxes = await serviceFaxes(emu!);
    expect(faxes).toHaveLength(1);
    expect(faxes[0]!.messageId).toBe(r.messageId);
    expect(faxes[0]!.cf).toEqual({ faxgateJob: job.id, faxgateSend: r.sendId });
    expect(faxes[0]!.subject).toBe("Hello");
    expect(faxes[0]!.recipientName).toBe("Dr. Who");
    expect(faxes[0]!.tags).toEqual([TEST_TAGS.billing]); // tag words stay local
    expect((await s.store.listNotifications({ jobId: job.id })).map((n) => n.dedupeKey)).toEqual([`outcome:${job.id}`]);
  });

  it("one send-to-many call for a multi-recipient job; a bad recipient fails alone", async () => {
    const s = await setup();
    const { job } = await s.store.enqueue(
      newJob(t!.dir, { recipients: [{ number: "+15557770101" }, { number: "+1234567" }, { number: "+15557770102" }] }),
    );
    await drain(s);
    expect(s.calls.get("sendFaxToMany")).toBe(1);
    expect(s.calls.get("sendFax") ?? 0).toBe(0);
    const done = (await s.store.getJob(job.id))!;
    expect(done.state).toBe("partial");
    expect(done.recipients.map((r) => r.state)).toEqual(["delivered", "failed", "delivered"]);
    expect(done.recipients[1]!.lastError).toMatch(/InvalidInput/);
    const faxes = await serviceFaxes(emu!);
    expect(faxes.map((f) => f.faxNumber).sort()).toEqual(["+15557770101", "+15557770102"]);
    expect(new Set(faxes.map((f) => f.cf.faxgateSend)).size).toBe(1);
  });

  it('send-to-many keeps each recipient\'s cover "To:" name: one call per name, the unnamed share one', async () => {
    const s = await setup();
    const { job } = await s.store.enqueue(
      newJob(t!.dir, {
        recipients: [
          { number: "+15557770111", name: "Acme Billing" },
          { number: "+15557770112", name: "Dr. Smith" },
          { number: "+15557770113" },
          { number: "+15557770114" },
          { number: "+15557770115", name: `Globex ${"Accounts Receivable ".repeat(3)}` },
        ],
        cover: { enabled: true, subject: "Names" },
      }),
    );
    await drain(s);
    expect((await s.store.getJob(job.id))!.state).toBe("delivered");
    const byNumber = Object.fromEntries((await serviceFaxes(emu!)).map((f) => [f.faxNumber, f.recipientName]));
    expect(byNumber["+15557770111"]).toBe("Acme Billing");
    expect(byNumber["+15557770112"]).toBe("Dr. Smith");
    expect(byNumber["+15557770113"] ?? null).toBeNull();
    expect(byNumber["+15557770114"] ?? null).toBeNull();
    expect(Array.from(byNumber["+15557770115"]!)).toHaveLength(40);
    expect(byNumber["+15557770115"]!.endsWith("…")).toBe(true);
    // the two without a name still go in one send-to-many call
    expect(s.calls.get("sendFaxToMany")).toBe(1);
    expect(s.calls.get("sendFax")).toBe(3);
  });

  it("with queue.scheduleAhead, a scheduled job is handed to the service with its date and followed while scheduled", async () => {
    const s = await setup({ queue: { scheduleAhead: 2 * 3_600_000 } });
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const { job } = await s.store.enqueue(
      newJob(t!.dir, { recipients: [{ number: "+15557770456" }], scheduledAt: at }),
    );
    await s.dispatcher.runOnce();
    await s.dispatcher.runOnce();
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("processing");
    const faxes = (await serviceFaxes(emu!)) as Array<EmulatedFax & { scheduledDate: string | null }>;
    expect(faxes.map((f) => [f.status, f.scheduledDate])).toEqual([["scheduled", at]]);
  });

  it("two jobs to one number: the second is dialled only after the first finished", async () => {
    const s = await setup({ delayMs: 150 });
    const a = (await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557770999" }] }))).job;
    const b = (await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557770999" }] }))).job;
    await s.dispatcher.runOnce();
    expect(s.calls.get("sendFax")).toBe(1);
    expect((await s.store.getJob(b.id))!.recipients[0]!.state).toBe("queued");
    await drain(s);
    const ra = (await s.store.getJob(a.id))!.recipients[0]!;
    const rb = (await s.store.getJob(b.id))!.recipients[0]!;
    expect([ra.state, rb.state]).toEqual(["delivered", "delivered"]);
    expect(rb.sentAt! >= ra.finishedAt!).toBe(true);
  });

  it("a busy number ends failed with the reason after maxFaxTries", async () => {
    const s = await setup({ queue: { maxFaxTries: 3 } });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557770000" }] }));
    await drain(s);
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("failed");
    expect(r.lastError).toBe("busy (3 tries)");
    expect(r.errorCode).toBe("6100");
    expect(await serviceFaxes(emu!)).toHaveLength(3);
  });

  it("a voice line fails at once", async () => {
    const s = await setup();
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557770002" }] }));
    await drain(s);
    expect((await s.store.getJob(job.id))!.recipients[0]).toMatchObject({ state: "failed", faxTries: 0 });
    expect(await serviceFaxes(emu!)).toHaveLength(1);
  });

  it("200 jobs through dropped connections and 5xx: exactly one fax each, every job final", async () => {
    const s = await setup({ delayMs: 20, queue: { retrySchedule: [20, 50] } });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 0.3, errorRate: 0.1 });
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      const { job } = await s.store.enqueue(
        newJob(t!.dir, { recipients: [{ number: `+1555880${String(1000 + i)}` }] }),
      );
      ids.push(job.id);
    }
    await drain(s, { maxMs: 60_000 });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 0, errorRate: 0 });
    const faxes = await serviceFaxes(emu!);
    const perJob = new Map<string, number>();
    for (const f of faxes) perJob.set(f.cf.faxgateJob!, (perJob.get(f.cf.faxgateJob!) ?? 0) + 1);
    expect(faxes).toHaveLength(200);
    expect([...perJob.values()].every((n) => n === 1)).toBe(true);
    const states = await Promise.all(ids.map(async (id) => (await s.store.getJob(id))!.state));
    expect(states.every((st) => st === "delivered")).toBe(true);
    // The faults really happened: 5xx answers were sent again, dropped answers were reconciled and adopted.
    expect(s.calls.get("sendFax")!).toBeGreaterThan(200);
    const adopted = s.logs.filter((l) => String(l.msg).startsWith("RECONCILED fax found"));
    expect(adopted.length).toBeGreaterThan(20);
    // No secret in any line.
    expect(JSON.stringify(s.logs)).not.toContain(EMU_KEY);
  }, 90_000);

  it("multi-recipient sends under drops and 5xx on the other API variant: each destination faxed once", async () => {
    const s = await setup({ variant: "b", delayMs: 20, queue: { retrySchedule: [20, 50] } });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 0.3, errorRate: 0.1 });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const recipients = [0, 1, 2].map((k) => ({ number: `+1555770${String(1000 + i * 3 + k)}` }));
      ids.push((await s.store.enqueue(newJob(t!.dir, { recipients }))).job.id);
    }
    await drain(s, { maxMs: 60_000 });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { dropRate: 0, errorRate: 0 });
    const faxes = await serviceFaxes(emu!);
    const seen = new Map<string, number>();
    for (const f of faxes)
      seen.set(`${f.cf.faxgateJob} ${f.faxNumber}`, (seen.get(`${f.cf.faxgateJob} ${f.faxNumber}`) ?? 0) + 1);
    expect(faxes).toHaveLength(60);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(
      (await Promise.all(ids.map(async (id) => (await s.store.getJob(id))!.state))).every((st) => st === "delivered"),
    ).toBe(true);
    expect(s.calls.get("sendFaxToMany")!).toBeGreaterThanOrEqual(20);
  }, 90_000);

  it("a 429 storm slows the dispatcher down instead of failing jobs", async () => {
    const s = await setup({ queue: { retrySchedule: [50] } });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { rateLimitRate: 0.8 });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push(
        (await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: `+1555660${String(1000 + i)}` }] }))).job.id,
      );
    const storm = setTimeout(() => void emulatorCall(emu!, "PUT", "/_emulator/faults", { rateLimitRate: 0 }), 1500);
    try {
      await drain(s, { maxMs: 60_000 });
    } finally {
      clearTimeout(storm);
    }
    expect(
      (await Promise.all(ids.map(async (id) => (await s.store.getJob(id))!.state))).every((st) => st === "delivered"),
    ).toBe(true);
    expect(await serviceFaxes(emu!)).toHaveLength(20);
    // 429s were seen and did not use up tries
    expect((await s.store.getJob(ids[0]!))!.recipients[0]!.attempts).toBeLessThanOrEqual(2);
  }, 90_000);

  it("a send claimed but never made is reconciled, then sent once; while history fails it stays unknown", async () => {
    const s = await setup({ queue: { reconcileGrace: 50 } });
    // An earlier fax came back with our cf: this account keeps custom fields, so a send it has no
    // record of never took effect (without that proof the send would be parked, not resent).
    await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557770778" }] }));
    await drain(s);
    s.calls.clear();
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557770777" }] }));
    // A process claimed it, let its call leave, and died before the request reached the service.
    const [dead] = await s.store.claimDue("dead-process", 5, 1);
    expect(await s.store.markCallLeaving("dead-process", dead!.sendId, [{ jobId: job.id, idx: 0 }])).toBe(true);
    // the lease runs out
    s.clock.advance(80);
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { errorRate: 1 });
    // the first pass finds the lease expired (unknown from now on); the lookup waits the grace from then
    await s.dispatcher.runOnce();
    expect((await s.store.getJob(job.id))!.recipients[0]!.lastError).toMatch(/^the gateway stopped/);
    // the reconcile grace passes
    s.clock.advance(80);
    await s.dispatcher.runOnce();
    let r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("unknown");
    expect(r.lastError).toMatch(/^reconciliation failed/);
    expect(s.calls.get("sendFax") ?? 0).toBe(0);
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { errorRate: 0 });
    await s.store.postponeUnknown({ jobId: job.id, idx: 0 }, r.sendId!, "test: look again now", new Date(0));
    await drain(s);
    r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("delivered");
    expect(r.attempts).toBe(2);
    expect(s.logs.some((l) => String(l.msg).startsWith("RECONCILED no fax at the service"))).toBe(true);
    const faxes = (await serviceFaxes(emu!)).filter((f) => f.faxNumber === "+15557770777");
    expect(faxes).toHaveLength(1);
    expect(faxes[0]!.cf.faxgateSend).toBe(r.sendId);
  });

  it("a send claimed whose call never left goes back to the queue: no lookup, sent once, even with cf dropped", async () => {
    const s = await setup({ queue: { reconcileGrace: 50 } });
    // the service's default: our custom fields are not kept, so a lookup could not tell "never made"
    await emulatorCall(emu!, "PUT", "/_emulator/behaviour", { cfMode: "dropped" });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557770779" }] }));
    // A process claimed it and died while the send waited in its gate, before the call left.
    const [dead] = await s.store.claimDue("dead-process", 5, 1);
    // nor may the dead process send it once its claim is gone (the mark is refused)
    s.clock.advance(80);
    await s.dispatcher.runOnce();
    expect(await s.store.markCallLeaving("dead-process", dead!.sendId, [{ jobId: job.id, idx: 0 }])).toBe(false);
    await drain(s);
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("delivered");
    expect(r.attempts).toBe(1);
    const steps = (await s.store.listEvents(job.id)).map((e) => e.transition);
    expect(steps).toContain("unclaim");
    expect(steps).not.toContain("expire");
    // never looked up: the lookup is what parks a send where cf is dropped
    expect(steps).not.toContain("postpone");
    expect(s.logs.some((l) => String(l.msg).startsWith("RECONCILED"))).toBe(false);
    expect((await serviceFaxes(emu!)).filter((f) => f.faxNumber === "+15557770779")).toHaveLength(1);
  });

  it("stop() leaves nothing in sending", async () => {
    const s = await setup({ delayMs: 200 });
    for (let i = 0; i < 10; i++)
      await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: `+1555440${String(1000 + i)}` }] }));
    s.dispatcher.start();
    // stop while sends are in flight: after the pass that claimed them, before the service answers
    await s.passes(1);
    expect((await s.store.counts()).recipients.sending).toBeGreaterThan(0);
    await s.dispatcher.stop({ timeoutMs: 5000 });
    const after = (await s.store.counts()).recipients;
    expect(after.sending).toBe(0);
    // the claimed sends ended accepted (or unknown, to be reconciled), not back in the queue unsent
    expect(after.processing + after.unknown + after.delivered).toBeGreaterThan(0);
  });
});

describe("new mail for a number at its limit", () => {
  it("wakes no pass until a fax ends, while mail for another number still wakes one", async () => {
    // polls 5 s apart, timed passes 1 s after the last pass: the extra passes counted are woken ones
    const s = await setup({ delayMs: 3000, queue: { pollInterval: 5000, perNumberConcurrency: 1 } });
    s.store.onEnqueued((job) => s.dispatcher.wake(job));
    const busy = "+15554410001";
    const inFlight = async () => {
      const r = (await s.store.counts()).recipients;
      return r.sending + r.processing === 1;
    };
    s.dispatcher.start();
    try {
      await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: busy }] }));
      // its fax is in flight (the service takes 3 s a call), and a claim since found nothing due
      await waitUntil(inFlight, "the first fax in flight");
      await s.passes(1);
      const before = s.passCount();
      let started = performance.now();
      for (let i = 0; i < 20; i++) {
        await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: busy }] }));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      // each of the 20 would have woken a pass; the timer runs one a second at most
      const timed = Math.ceil((performance.now() - started) / 1000) + 1;
      expect(s.passCount() - before).toBeLessThanOrEqual(timed);
      expect(await inFlight()).toBe(true);
      // ten jobs for other numbers, one after another, each claimed before the next: a wake
      // claims each at once, the timer alone would take a second or so for each
      started = performance.now();
      for (let i = 0; i < 10; i++) {
        const { job } = await s.store.enqueue(
          newJob(t!.dir, { recipients: [{ number: `+155544101${String(10 + i)}` }] }),
        );
        await waitUntil(async () => (await s.store.getJob(job.id))!.recipients[0]!.state !== "queued", "claimed");
      }
      expect(performance.now() - started).toBeLessThan(4000);
      expect((await s.store.counts()).recipients.queued).toBe(20);
    } finally {
      await s.dispatcher.stop({ timeoutMs: 5000 });
    }
  }, 60_000);
});

describe("stop() while a claimed send has not made its first call", () => {
  // Found in a full CI run (26 Nov 2026): SIGTERM came while a just-claimed send was reading its
  // documents, between calls; stop() saw an idle gate, marked the send unknown, and after the
  // restart the gateway could not tell whether that fax had gone out (it never had) and parked it.
  it("waits for it: the send is put back unsent, never marked unknown, and goes out once afterwards", async () => {
    const s = await setup();
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15554401999" }] }));
    // the send reads its documents before its first call: held there until stop() has begun
    let reached!: () => void;
    const atDocuments = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const documentPath = s.store.documentPath.bind(s.store);
    s.store.documentPath = async (d) => {
      reached();
      await held;
      return documentPath(d);
    };
    s.dispatcher.start();
    await atDocuments;
    expect((await s.store.getJob(job.id))!.recipients[0]!.state).toBe("sending");
    const stopped = s.dispatcher.stop({ timeoutMs: 10_000 });
    // stop() cannot be over while the claimed send is still before its first call
    const first = await Promise.race([
      stopped.then(() => "stopped"),
      new Promise((r) => setTimeout(() => r("still waiting"), 500)),
    ]);
    expect(first).toBe("still waiting");
    release();
    await stopped;
    s.store.documentPath = documentPath;
    // put back to be tried again at once, as a send stopped before it went out is
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("deferred");
    expect(Date.parse(r.nextAttemptAt!)).toBeLessThanOrEqual(Date.now());
    expect(s.calls.get("sendFax") ?? 0).toBe(0);
    expect(s.logs.some((l) => String(l.msg).startsWith("stopped with sends in flight"))).toBe(false);
    await drain(s);
    expect((await s.store.getJob(job.id))!.recipients[0]!.state).toBe("delivered");
    expect((await serviceFaxes(emu!)).filter((f) => f.faxNumber === "+15554401999")).toHaveLength(1);
  });
});

describe("a store that cannot be used", () => {
  it("logs the first failed pass and the recovery, not one error per pass", async () => {
    const s = await setup();
    const real = s.store.releaseExpired.bind(s.store);
    let broken = false;
    s.store.releaseExpired = (opts) => {
      if (broken) throw new Error("SQLITE_READONLY: attempt to write a readonly database");
      return real(opts);
    };
    s.dispatcher.start();
    broken = true;
    try {
      // many failed passes (the store's writes are tried at most every 250 ms, passes run every
      // pollInterval), then the store works again
      await s.passes(15);
      broken = false;
      const recovered = () => s.logs.some((l) => l.msg === "dispatch passes work again");
      while (!recovered()) await s.passes(1);
    } finally {
      await s.dispatcher.stop({ timeoutMs: 2000 });
    }
    const failed = s.logs.filter((l) => String(l.msg).startsWith("dispatch pass failed"));
    const back = s.logs.find((l) => l.msg === "dispatch passes work again");
    expect(failed).toHaveLength(1);
    // passes run every pollInterval (100 ms): many failed, one line said so
    expect(back?.failedPasses).toBeGreaterThan(3);
  });
});

describe("maximum age", () => {
  it("a recipient still failing temporarily past queue.maxAge fails as expired, with our code and an outcome notice", async () => {
    const s = await setup({ queue: { maxAge: 1800 } });
    await emulatorCall(emu!, "PUT", "/_emulator/faults", { errorRate: 1 });
    const { job } = await s.store.enqueue(newJob(t!.dir, { recipients: [{ number: "+15557771234" }] }));
    await drain(s);
    const r = (await s.store.getJob(job.id))!.recipients[0]!;
    expect(r.state).toBe("failed");
    expect(r.errorCode).toBe("JOB_EXPIRED");
    expect(r.lastError).toMatch(/^expired: not delivered within/);
    // tried and failed temporarily at least once; how many tries fit in 1.8 s depends on the
    // machine's load (a wall-clock count, which the main suite does not assert: issue 49)
    expect(r.attempts).toBeGreaterThanOrEqual(1);
    expect((await s.store.claimNotifications("t", 10, 1000)).map((n) => n.dedupeKey)).toContain(`outcome:${job.id}`);
    expect(await serviceFaxes(emu!)).toHaveLength(0);
  });
});
