// A dispatcher process killed with SIGKILL mid-run; a fresh one finishes the work: no job lost,
// no fax sent twice (counted per cf.faxgateJob at the service).
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { emulatorCall } from "../helpers/client.js";
import type { ChildSpec } from "../helpers/dispatcher-child.js";
import { startTestEmulator } from "../helpers/emulator.js";
import { newJob, tempStore, type TempStore } from "../helpers/store.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { waitUntil } from "../helpers/wait.js";
import { EMU_KEY, type EmulatedFax } from "./emulator-facts.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const children: ChildProcess[] = [];
let emu: Awaited<ReturnType<typeof startTestEmulator>> | null = null;
let t: TempStore | null = null;

afterEach(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  children.length = 0;
  await disposeEmulatorAndStore(emu, t);
  emu = null;
  t = null;
});

function runChild(spec: ChildSpec): ChildProcess {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(root, "test/helpers/dispatcher-child.ts"), JSON.stringify(spec)],
    {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  children.push(child);
  return child;
}

function waitFor(child: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      if (buf.includes(`${line}\n`)) resolve();
    });
    child.on("exit", (code, sig) => reject(new Error(`child exited (${code ?? sig}) before ${line}`)));
  });
}

/** Queues `n` one-recipient faxes for the emulator's user, numbers from `prefix` + 1000. */
async function queueJobs(n: number, prefix: string): Promise<string[]> {
  const jobs: string[] = [];
  for (let i = 0; i < n; i++)
    jobs.push(
      (
        await t!.store.enqueue(
          newJob(t!.dir, { user: "emu", recipients: [{ number: `${prefix}${String(1000 + i)}` }] }),
        )
      ).job.id,
    );
  return jobs;
}

/** A child dispatcher on the test's store and emulator, with short leases and polls. */
function childSpec(api: Record<string, unknown>): ChildSpec {
  return {
    dataDir: path.join(t!.dir, "data"),
    baseUrl: emu!.baseUrl,
    caFile: emu!.caFile,
    keys: { emu: EMU_KEY },
    api,
    queue: { retrySchedule: ["50ms"], pollInterval: "100ms", reconcileGrace: "200ms", lease: "1s" },
  };
}

const faxes = async (): Promise<EmulatedFax[]> =>
  (await emulatorCall(emu!, "GET", "/_emulator/faxes")) as EmulatedFax[];

/** The faxes the service made, per job (from cf, which the emulator's own view always keeps). */
function perJob(all: EmulatedFax[]): Map<string, number> {
  const n = new Map<string, number>();
  for (const f of all) n.set(f.cf.faxgateJob!, (n.get(f.cf.faxgateJob!) ?? 0) + 1);
  return n;
}

it("a SIGKILLed dispatcher loses no job and sends no fax twice", async () => {
  // Slow answers so the kill lands while sends are on the wire.
  emu = await startTestEmulator({ delayMs: 100 });
  await emulatorCall(emu, "PUT", "/_emulator/faults", { latencyMs: 150 });
  t = tempStore();
  const jobs = await queueJobs(40, "+1555330");
  const spec = childSpec({ concurrency: 6, ratePerSecond: 1000 });

  const first = runChild(spec);
  await waitFor(first, "READY");
  // killed at a moment when sends are on the wire: between its batches a dispatcher may briefly
  // have none, and a kill there would leave nothing for the next one to reconcile
  await waitUntil(
    async () => (await faxes()).length >= 12 && (await t!.store.counts()).recipients.sending > 0,
    "the first sends, and more on the wire",
    30_000,
    25,
  );
  first.kill("SIGKILL");
  await new Promise((r) => first.once("exit", r));
  const mid = await t.store.counts();
  // The kill really interrupted work in flight or left work to do.
  expect(mid.jobs.queued + mid.jobs.active).toBeGreaterThan(0);
  // Sends were on the wire (claimed, leased to the dead process): the next one must reconcile them.
  expect(mid.recipients.sending).toBeGreaterThan(0);

  const second = runChild(spec);
  await waitFor(second, "READY");
  await waitUntil(
    async () => {
      const c = await t!.store.counts();
      return c.jobs.queued + c.jobs.active === 0;
    },
    "the second dispatcher to finish",
    60_000,
    25,
  );
  second.kill("SIGTERM");
  await new Promise((r) => second.once("exit", r));

  const all = await faxes();
  const made = perJob(all);
  expect(jobs.filter((id) => made.get(id) !== 1)).toEqual([]);
  expect(all).toHaveLength(40);
  expect(
    (await Promise.all(jobs.map(async (id) => (await t!.store.getJob(id))!.state))).every((s) => s === "delivered"),
  ).toBe(true);
}, 120_000);

it("a dispatcher killed with sends waiting behind its rate gate leaves none parked, though the service drops cf", async () => {
  emu = await startTestEmulator({ delayMs: 100 });
  // the service's default: our custom fields are not kept, so a lookup cannot prove "never made"
  // and a send it finds no record of is parked for an operator (docs/ha.md)
  await emulatorCall(emu, "PUT", "/_emulator/behaviour", { cfMode: "dropped" });
  t = tempStore();
  const jobs = await queueJobs(30, "+1555331");
  // twice the concurrency claimed at once, let out at 2 a second: most wait in the gate
  const spec = childSpec({ concurrency: 6, ratePerSecond: 2 });

  const first = runChild(spec);
  await waitFor(first, "READY");
  await waitUntil(
    async () => {
      const n = (await faxes()).length;
      const c = (await t!.store.counts()).recipients;
      return n >= 3 && c.sending >= 8;
    },
    "sends claimed beyond what the gate lets out",
    30_000,
    25,
  );
  first.kill("SIGKILL");
  await new Promise((r) => first.once("exit", r));
  const claimed = (await t.store.counts()).recipients.sending;
  const leftBeforeKill = (await faxes()).length;

  const second = runChild(childSpec({ concurrency: 6, ratePerSecond: 50 }));
  await waitFor(second, "READY");
  const recipients = async () =>
    (await Promise.all(jobs.map(async (id) => (await t!.store.getJob(id))!.recipients[0]!))).map((r) => ({
      state: r.state,
      parked: r.state === "unknown" && (r.lastError ?? "").startsWith("parked"),
    }));
  // every send delivered, or parked (which nothing but an operator moves on from)
  await waitUntil(
    async () => (await recipients()).every((r) => r.state === "delivered" || r.parked),
    "every send delivered or parked",
    60_000,
    50,
  );
  second.kill("SIGTERM");
  await new Promise((r) => second.once("exit", r));

  const all = await faxes();
  const made = perJob(all);
  const parked = (await recipients()).filter((r) => r.parked).length;
  console.log(`killed with ${claimed} claimed, ${leftBeforeKill} at the service; ${parked} parked`);
  expect(claimed).toBeGreaterThanOrEqual(8);
  expect(jobs.filter((id) => (made.get(id) ?? 0) > 1)).toEqual([]);
  expect(parked).toBe(0);
  expect(all).toHaveLength(30);
}, 120_000);
