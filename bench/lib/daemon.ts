// The real daemon (`faxgate start --config`, its own process, as an admin runs it) against an
// emulator in the bench process over HTTPS, for the bench rows that need the whole chain or the
// daemon's own memory. Queue settings are the defaults unless a bench says otherwise.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Agent, request } from "undici";
import { childEnv, spawnCli } from "../../test/helpers/cli.js";
import { OutputWatch } from "../../test/helpers/wait.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../../test/helpers/emulator.js";
import { freePort } from "./postfix.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/**
 * The daemon runs as an admin runs it: built (bin/faxgate.js), compiled fresh from src/ once per
 * bench process. Under tsx every reader thread loads the loader too (about 200 MB each), which
 * would be measured as the daemon's memory. FAXGATE_BENCH_SOURCE=1 runs the source through tsx.
 */
export const BUILT = process.env.FAXGATE_BENCH_SOURCE !== "1";
export const HOW = BUILT ? "built daemon" : "daemon from source (tsx)";
let built = false;

function buildOnce(): void {
  if (built) return;
  execFileSync(
    process.execPath,
    [path.join(root, "node_modules/typescript/bin/tsc"), "-p", path.join(root, "tsconfig.build.json")],
    { stdio: "inherit" },
  );
  built = true;
}

/**
 * A module of faxgate for a bench that runs a part of it in its own process: from dist/ (built
 * fresh once) like the daemon, or from src/ with FAXGATE_BENCH_SOURCE=1. `rel` is the path under
 * src/ without its extension, e.g. 'smtp/server'.
 */
export async function faxgateModule<M>(rel: string): Promise<M> {
  if (BUILT) buildOnce();
  return (await import(
    pathToFileURL(path.join(root, BUILT ? "dist" : "src", `${rel}.${BUILT ? "js" : "ts"}`)).href
  )) as M;
}

export const DOMAIN = "fax.example.com";
export const SENDER = "alice@example.com";

export interface BenchDaemon {
  smtpPort: number;
  pid: number;
  emu: TestEmulator;
  stop(): Promise<void>;
  /** the daemon's log (stdout), for a bench that waits for one of its lines */
  out: OutputWatch;
  /** the emulator's fax rows (GET /_emulator/faxes) */
  faxes(): Promise<Array<{ faxNumber: string; createdAt: string; cf?: Record<string, string> }>>;
}

export interface BenchDaemonOptions {
  /** the emulator's processing time per fax */
  emuDelayMs: number;
  /** api.concurrency and api.ratePerSecond; the defaults (4, 5/s) when left out */
  api?: { concurrency: number; ratePerSecond: number };
  /** node flags for the built daemon (e.g. --cpu-prof, which NODE_OPTIONS does not take) */
  nodeArgs?: string[];
  /** more top-level config lines (YAML), e.g. ["office:", "  warm: false"] */
  config?: string[];
}

export async function startBenchDaemon(opts: BenchDaemonOptions): Promise<BenchDaemon> {
  if (BUILT) buildOnce();
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-"));
  const emu = await startTestEmulator({ delayMs: opts.emuDelayMs });
  const agent = new Agent({ connect: { ca: emu.caPem } });
  let child: ChildProcess | null = null;
  // if the bench exits without stop(), the daemon must not outlive it
  const onExit = (): void => void child?.kill("SIGKILL");
  process.once("exit", onExit);
  const stop = async (): Promise<void> => {
    process.off("exit", onExit);
    if (child && child.exitCode === null && child.signalCode === null) {
      const c = child;
      const gone = new Promise<void>((resolve) => c.once("exit", () => resolve()));
      c.kill("SIGTERM");
      const timer = setTimeout(() => c.kill("SIGKILL"), 20_000);
      await gone;
      clearTimeout(timer);
    }
    await agent.close();
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const smtpPort = await freePort();
    const configFile = path.join(dir, "faxgate.yaml");
    writeFileSync(
      configFile,
      [
        "api:",
        `  baseUrl: ${emu.baseUrl}`,
        `  caFile: ${emu.caFile}`,
        ...(opts.api ? [`  concurrency: ${opts.api.concurrency}`, `  ratePerSecond: ${opts.api.ratePerSecond}`] : []),
        `data: ${path.join(dir, "data")}`,
        "smtp:",
        `  listen: ["127.0.0.1:${smtpPort}"]`,
        `  domains: ["${DOMAIN}"]`,
        "  maxMessagesPerMinute: 100000",
        "log: {level: info, format: json}",
        ...(opts.config ?? []),
        "users:",
        `  - {name: alice, email: ${SENDER}, apiKey: ${TEST_KEYS.alice}}`,
        "",
      ].join("\n"),
    );
    child = BUILT
      ? spawn(
          process.execPath,
          [...(opts.nodeArgs ?? []), path.join(root, "bin/faxgate.js"), "start", "--config", configFile],
          { cwd: dir, env: childEnv(), stdio: ["pipe", "pipe", "pipe"] },
        )
      : spawnCli(["start", "--config", configFile], { cwd: dir });
    const out = new OutputWatch(child.stdout!);
    const err = new OutputWatch(child.stderr!);
    const c = child;
    await Promise.race([
      out.waitFor(/"msg":"STARTED"/, 60_000),
      new Promise((_, reject) =>
        c.once("exit", (code) =>
          reject(new Error(`daemon exited with ${code}: ${err.text.slice(-2000)}${out.text.slice(-2000)}`)),
        ),
      ),
    ]);
    return {
      smtpPort,
      pid: child.pid!,
      emu,
      out,
      stop,
      async faxes() {
        const res = await request(`${emu.baseUrl}/_emulator/faxes`, {
          dispatcher: agent,
          headers: { authorization: `Basic ${emu.adminKey}` },
        });
        return (await res.body.json()) as Array<{ faxNumber: string; createdAt: string; cf?: Record<string, string> }>;
      },
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Resident set size now and its high-water mark, from /proc (bytes). */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** Resets the high-water mark to the current RSS (Linux >= 4.0), so a peak belongs to one phase. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}
