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

it("a SIGKILLed dispatcher loses no job and sends no fax twice", async () => {
  // Slow answers so the kill lands while sends are on the wire.
  emu = await startTestEmulator({ delayMs: 100 });
  await emulatorCall(emu, "PUT", "/_emulator/faults", { latencyMs: 150 });
  t = tempStore();
  const jobs: string[] = [];
  for (let i = 0; i < 40; i++)
    jobs.push(
      (await t.store.enqueue(newJob(t.dir, { user: "emu", recipients: [{ number: `+1555330${String(1000 + i)}` }] })))
        .job.id,
    );
  const caFile = emu.caFile;
  const spec: ChildSpec = {
    dataDir: path.join(t.dir, "data"),
    baseUrl: emu.baseUrl,
    caFile,
    keys: { emu: EMU_KEY },
    api: { concurrency: 6, ratePerSecond: 1000 },
    queue: { retrySchedule: ["50ms"], pollInterval: "100ms", reconcileGrace: "200ms", lease: "1s" },
  };
  const faxes = async (): Promise<EmulatedFax[]> =>
    (await emulatorCall(emu!, "GET", "/_emulator/faxes")) as EmulatedFax[];

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
  const perJob = new Map<string, number>();
  for (const f of all) perJob.set(f.cf.faxgateJob!, (perJob.get(f.cf.faxgateJob!) ?? 0) + 1);
  expect(jobs.filter((id) => perJob.get(id) !== 1)).toEqual([]);
  expect(all).toHaveLength(40);
  expect(
    (await Promise.all(jobs.map(async (id) => (await t!.store.getJob(id))!.state))).every((s) => s === "delivered"),
  ).toBe(true);
}, 120_000);
