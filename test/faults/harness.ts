// Shared pieces of the fault suite: a daemon under a real config against an in-test emulator,
// started and SIGKILLed as a process, and a tally of what the emulator really faxed.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { Agent, request } from "undici";
import { spawnCli } from "../helpers/cli.js";
import { OutputWatch } from "../helpers/wait.js";
import { freePort } from "../helpers/net.js";
import { startTestEmulator, TEST_KEYS } from "../helpers/emulator.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";

export const SHORT = process.env.FAXGATE_FAULTS_SHORT === "1";

export type Emu = Awaited<ReturnType<typeof startTestEmulator>>;

export { freePort };

export interface Rig {
  dir: string;
  configFile: string;
  smtpPort: number;
  spoolRoot: string;
  dataDir: string;
  emu: Emu;
  agent: Agent;
  /** The log output of every daemon started on this rig, killed or not. */
  outputs: OutputWatch[];
}

export async function makeRig(opts: { delayMs?: number; extraYaml?: string } = {}): Promise<Rig> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-faults-"));
  const emu = await startTestEmulator({ delayMs: opts.delayMs ?? 300 });
  const smtpPort = await freePort();
  const spoolRoot = path.join(dir, "spool");
  const dataDir = path.join(dir, "data");
  mkdirSync(spoolRoot, { recursive: true });
  const configFile = path.join(dir, "faxgate.yaml");
  writeFileSync(
    configFile,
    [
      "api:",
      `  baseUrl: ${emu.baseUrl}`,
      `  caFile: ${emu.caFile}`,
      "  concurrency: 8",
      "  ratePerSecond: 200",
      // the test emulator does not limit history (historyPerMinute 0): neither do we here
      "  historyPerMinute: 10000",
      "  timeoutMs: 5000",
      `data: ${dataDir}`,
      "smtp:",
      `  listen: ["127.0.0.1:${smtpPort}"]`,
      '  domains: ["fax.example.com"]',
      "  maxMessagesPerMinute: 100000",
      "spool:",
      `  root: ${spoolRoot}`,
      "  stableFor: 200ms",
      "queue:",
      "  retrySchedule: [1s, 2s]",
      "  pollInterval: 300ms",
      "notify:",
      "  from: faxgate@example.com",
      `  transport: outbox:${path.join(dir, "outbox")}`,
      "  inbound: {enabled: false}",
      "log: {level: info, format: json}",
      // no LibreOffice started ahead of need at each of the many daemon starts (office.warm)
      "office: {warm: false}",
      "users:",
      `  - {name: alice, email: alice@example.com, apiKey: ${TEST_KEYS.alice}}`,
      `  - {name: bob, email: bob@example.com, apiKey: ${TEST_KEYS.bob}}`,
      opts.extraYaml ?? "",
    ].join("\n"),
  );
  const agent = new Agent({ connect: { ca: emu.caPem } });
  return { dir, configFile, smtpPort, spoolRoot, dataDir, emu, agent, outputs: [] };
}

export interface Daemon {
  child: ChildProcess;
  out: OutputWatch;
  err: OutputWatch;
}

export async function startDaemon(rig: Rig): Promise<Daemon> {
  const child = spawnCli(["start", "--config", rig.configFile], { cwd: rig.dir });
  const out = new OutputWatch(child.stdout!);
  const err = new OutputWatch(child.stderr!);
  rig.outputs.push(out);
  await Promise.race([
    out.waitFor(/"msg":"STARTED"/, 60_000),
    new Promise((_, reject) =>
      child.once("exit", (code) =>
        reject(new Error(`daemon exited with ${code}: ${err.text.slice(-2000)}${out.text.slice(-2000)}`)),
      ),
    ),
  ]);
  return { child, out, err };
}

/** Lines any daemon of this rig logged as a bug (an unhandled rejection): a fault must never cause one. */
export function bugLines(rig: Rig): string[] {
  return rig.outputs.flatMap((o) => o.text.split("\n")).filter((l) => l.includes('"msg":"BUG:'));
}

/** Tears a rig down: its daemon (if any) stopped with `signal`, then the emulator and the folder. */
export async function disposeRig(
  rig: Rig | undefined,
  daemon?: Daemon | null,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<void> {
  if (daemon) await kill(daemon, signal);
  if (!rig) return;
  await rig.agent.close();
  await rig.emu.stop();
  rmSync(rig.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

export function kill(d: Daemon, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  return new Promise((resolve) => {
    if (d.child.exitCode !== null || d.child.signalCode !== null) return resolve();
    d.child.once("exit", () => resolve());
    d.child.kill(signal);
  });
}

export interface EmulatedFax {
  messageId: string;
  faxNumber: string;
  status: string;
  cf?: Record<string, string>;
}

export async function emulatorFaxes(rig: Rig): Promise<EmulatedFax[]> {
  const res = await request(`${rig.emu.baseUrl}/_emulator/faxes`, {
    dispatcher: rig.agent,
    headers: { authorization: `Basic ${rig.emu.adminKey}` },
  });
  const body = (await res.body.json()) as unknown;
  return (
    Array.isArray(body) ? body : ((body as { faxes?: unknown[] }).faxes ?? (body as { rows?: unknown[] }).rows ?? [])
  ) as EmulatedFax[];
}

export async function setFaults(rig: Rig, faults: Record<string, number>): Promise<void> {
  const res = await request(`${rig.emu.baseUrl}/_emulator/faults`, {
    method: "PUT",
    dispatcher: rig.agent,
    headers: { authorization: `Basic ${rig.emu.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(faults),
  });
  await res.body.dump();
  if (res.statusCode >= 300) throw new Error(`faults: HTTP ${res.statusCode}`);
}

/** "+1555300" + 4 digits: last four never 0000-0003, so every fax is delivered on its first try. */
export function numberFor(i: number): string {
  return `+1555${String(3_000_000 + 1000 + i).padStart(7, "0")}`;
}

export function tally(
  expected: Set<string>,
  faxes: EmulatedFax[],
): { accepted: number; faxed: number; lost: string[]; duplicated: string[] } {
  const counts = new Map<string, number>();
  for (const f of faxes) counts.set(f.faxNumber, (counts.get(f.faxNumber) ?? 0) + 1);
  const lost = [...expected].filter((n) => !counts.has(n));
  const duplicated = [...counts.entries()].filter(([, c]) => c > 1).map(([n]) => n);
  return { accepted: expected.size, faxed: [...expected].filter((n) => counts.has(n)).length, lost, duplicated };
}

/**
 * Replaces one line of the rig's config (makeRig's blocks cannot be given twice in extraYaml):
 * e.g. patchConfig(rig, '  stableFor: 200ms', '  stableFor: 800ms\n  maxFileBytes: 65536').
 */
export function patchConfig(rig: Rig, line: string, replacement: string): void {
  const text = readFileSync(rig.configFile, "utf8");
  const lines = text.split("\n");
  const i = lines.indexOf(line);
  if (i < 0) throw new Error(`patchConfig: no line ${JSON.stringify(line)} in ${rig.configFile}`);
  lines[i] = replacement;
  writeFileSync(rig.configFile, lines.join("\n"));
}

/** The config line of the rig's notification transport (an outbox folder), for patchConfig. */
export function notifyTransportLine(rig: Rig): string {
  return `  transport: outbox:${path.join(rig.dir, "outbox")}`;
}

/**
 * True when every job in the daemon's queue is final. Nothing final is ever sent again, so once
 * this holds no duplicate fax can still be on its way: wait for it instead of sleeping.
 */
export async function allJobsFinal(rig: Rig): Promise<boolean> {
  const store = SqliteStore.open({ dataDir: rig.dataDir });
  try {
    return (await store.listJobs({ limit: 100_000 })).every((j) =>
      (FINAL_JOB_STATES as readonly string[]).includes(j.state),
    );
  } finally {
    store.close();
  }
}
