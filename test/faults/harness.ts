// Shared pieces of the fault suite: the daemon as the main suite builds it (test/helpers/gateway.ts:
// prepareDaemon, launchDaemon), with the fault suite's config over the base (a fixed SMTP port, so
// clients keep their address across a SIGKILL and restart; a fast queue), started and SIGKILLed as
// a process; and a tally of what the emulator really faxed.
import { mkdirSync, writeFileSync } from "node:fs";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import path from "node:path";
import { Agent, request } from "undici";
import {
  endChild,
  launchDaemon,
  mergeSections,
  prepareDaemon,
  type LaunchedDaemon,
  type Sections,
  type TestDaemon,
} from "../helpers/gateway.js";
import type { OutputWatch } from "../helpers/wait.js";
import { freePort } from "../helpers/net.js";
import type { TestEmulator } from "../helpers/emulator.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";

export const SHORT = process.env.FAXGATE_FAULTS_SHORT === "1";

export type Emu = TestEmulator;

export { freePort };

export interface Rig {
  /** The one builder's daemon (not started by makeRig: startDaemon starts one, as often as asked). */
  daemon: TestDaemon;
  dir: string;
  configFile: string;
  smtpPort: number;
  spoolRoot: string;
  dataDir: string;
  emu: Emu;
  agent: Agent;
  /** The log output of every daemon started on this rig, killed or not. */
  outputs: OutputWatch[];
  /** The config as written to `configFile`. */
  readonly raw: Sections;
  /** Writes the config `change` makes of the raw one (for the next start or a SIGHUP). */
  rewrite(change: (raw: Sections) => Sections): void;
}

/** What the fault suite sets over the main suite's base config. */
function faultSections(dir: string, smtpPort: number): Sections {
  return {
    api: {
      concurrency: 8,
      ratePerSecond: 200,
      // the test emulator does not limit history (historyPerMinute 0): neither do we here
      historyPerMinute: 10000,
      timeoutMs: 5000,
    },
    smtp: { listen: [`127.0.0.1:${smtpPort}`], domains: ["fax.example.com"], maxMessagesPerMinute: 100000 },
    spool: { root: path.join(dir, "spool"), stableFor: "200ms" },
    queue: { retrySchedule: ["1s", "2s"], pollInterval: "300ms" },
    notify: {
      from: "faxgate@example.com",
      transport: `outbox:${path.join(dir, "outbox")}`,
      inbound: { enabled: false },
    },
  };
}

/**
 * A fault rig: folder, emulator (processing delay `delayMs`, default 300) and config file, with
 * `config` merged over the fault suite's sections (as testConfig merges: objects key by key,
 * arrays replace). No daemon runs yet.
 */
export async function makeRig(
  opts: { delayMs?: number; config?: Sections | ((at: { dir: string }) => Sections) } = {},
): Promise<Rig> {
  const smtpPort = await freePort();
  const daemon = await prepareDaemon({
    name: "faults",
    emulator: { delayMs: opts.delayMs ?? 300 },
    prepare: (dir) => void mkdirSync(path.join(dir, "spool"), { recursive: true }),
    config: ({ dir }) =>
      mergeSections(
        faultSections(dir, smtpPort),
        typeof opts.config === "function" ? opts.config({ dir }) : (opts.config ?? {}),
      ),
  });
  const agent = new Agent({ connect: { ca: daemon.emu.caPem } });
  return {
    daemon,
    dir: daemon.dir,
    configFile: daemon.configFile,
    smtpPort,
    spoolRoot: path.join(daemon.dir, "spool"),
    dataDir: path.join(daemon.dir, "data"),
    emu: daemon.emu,
    agent,
    outputs: daemon.outputs,
    get raw() {
      return daemon.raw;
    },
    rewrite: (change) => daemon.rewrite(change),
  };
}

/**
 * A second gateway on the rig's config (same service, users, database): its own folder under the
 * rig's, SMTP port, data and spool folders. Its daemons log into the rig's outputs too.
 */
export async function secondRig(rig: Rig, name: string): Promise<Rig> {
  const dir = path.join(rig.dir, name);
  const smtpPort = await freePort();
  const spoolRoot = path.join(dir, "spool");
  const dataDir = path.join(dir, "data");
  mkdirSync(spoolRoot, { recursive: true });
  const configFile = path.join(dir, "faxgate.yaml");
  let raw = mergeSections(rig.raw, {
    data: dataDir,
    smtp: { listen: [`127.0.0.1:${smtpPort}`] },
    spool: { root: spoolRoot },
  });
  const write = () => writeFileSync(configFile, JSON.stringify(raw, null, 2));
  write();
  return {
    ...rig,
    dir,
    configFile,
    smtpPort,
    spoolRoot,
    dataDir,
    get raw() {
      return raw;
    },
    rewrite(change) {
      raw = change(raw);
      write();
    },
  };
}

export type Daemon = LaunchedDaemon;

/** Starts a daemon on the rig's config file (the one way: launchDaemon); resolves once it logged STARTED. */
export async function startDaemon(rig: Rig): Promise<Daemon> {
  const d = await launchDaemon(rig.configFile, rig.dir);
  rig.outputs.push(d.out);
  return d;
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
  await rig.daemon.stop();
}

export function kill(d: Daemon, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  return endChild(d.child, signal);
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

/** An emulator admin route's JSON (GET), or DELETE's; a refusal throws with its status. */
export async function emulatorAdmin<T>(rig: Rig, p: string, method: "GET" | "DELETE" = "GET"): Promise<T> {
  const res = await request(`${rig.emu.baseUrl}${p}`, {
    method,
    dispatcher: rig.agent,
    // no content-type: the emulator (fastify) refuses an empty body that says it is JSON
    headers: { authorization: `Basic ${rig.emu.adminKey}` },
  });
  if (res.statusCode >= 300) throw new Error(`${method} ${p}: HTTP ${res.statusCode} ${await res.body.text()}`);
  return (await res.body.json()) as T;
}

/** Sets the emulator's behaviour switches (docs/emulator.md), e.g. the account's limits. */
export async function setBehaviour(rig: Rig, body: Record<string, unknown>): Promise<void> {
  const res = await request(`${rig.emu.baseUrl}/_emulator/behaviour`, {
    method: "PUT",
    dispatcher: rig.agent,
    headers: { authorization: `Basic ${rig.emu.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.body.dump();
  if (res.statusCode >= 300) throw new Error(`behaviour: HTTP ${res.statusCode}`);
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

/** A one-page PDF with one line of text: the attachment of the load tests' mails. */
export async function onePagePdf(text: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc
    .addPage([612, 792])
    .drawText(text, { x: 72, y: 700, size: 12, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
}

/** A mail of a load test: the numbers it names, and whether the gateway took it. */
export interface Mail {
  id: number;
  numbers: string[];
  accepted: boolean;
}
