// Runs the faxgate CLI from source in a child process, as a user would run the installed one.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BUILT_CLI_ENTRY, haveBuiltSources } from "./built-sources.js";
import { OutputWatch } from "./wait.js";

// test/store/checkpointer.test.ts still imports waitUntil from here (test/store is the store's)
export { waitUntil } from "./wait.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const TSX_LOADER = pathToFileURL(path.join(root, "node_modules/tsx/dist/loader.mjs")).href;
export const CLI_ENTRY = path.join(root, "src/cli/entry.ts");

/**
 * How node runs the CLI: the sources compiled once by the global setup (test/helpers/built-sources.ts),
 * or the TypeScript sources through tsx (outside a vitest run, or with FAXGATE_TEST_FROM_SOURCE=1).
 */
export function cliArgv(): string[] {
  const built = process.env.FAXGATE_TEST_FROM_SOURCE !== "1" && haveBuiltSources();
  return built ? [BUILT_CLI_ENTRY] : ["--import", TSX_LOADER, CLI_ENTRY];
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment for children: no FAXGATE_CONFIG leaking in from the developer's shell. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (!("FAXGATE_CONFIG" in extra)) delete env.FAXGATE_CONFIG;
  return env;
}

export function spawnCli(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): ChildProcess {
  return spawn(process.execPath, [...cliArgv(), ...args], {
    cwd: opts.cwd ?? root,
    env: childEnv(opts.env),
    stdio: ["pipe", "pipe", "pipe"],
  });
}

export function runCli(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, opts);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`faxgate ${args.join(" ")} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin!.end(opts.input ?? "");
  });
}

/** Parses Prometheus text exposition into {"name{labels}": value}. */
export function parsePrometheus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)/.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    out.set(m[1]!, Number(m[2]));
  }
  return out;
}

export interface Sandbox {
  /** The folder it was started in, as a new user's empty folder. */
  cwd: string;
  child: ChildProcess;
  /** Its stderr up to and including the banner. */
  banner: string;
  /** Kills it and removes the folder. */
  stop(): Promise<void>;
}

/**
 * `faxgate start` with no config, as the README's quick start runs it, in a fresh folder named
 * after `prefix`, every listener on a free port; resolves once the banner is out.
 */
export async function startSandbox(prefix: string): Promise<Sandbox> {
  const cwd = mkdtempSync(path.join(os.tmpdir(), prefix));
  const child = spawnCli(
    [
      "start",
      "--smtp-listen",
      "127.0.0.1:0",
      "--admin-listen",
      "127.0.0.1:0",
      "--web-listen",
      "127.0.0.1:0",
      "--delay-ms",
      "300",
    ],
    { cwd },
  );
  const err = new OutputWatch(child.stderr!);
  new OutputWatch(child.stdout!);
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise((resolve) => {
        child.once("exit", resolve);
        child.kill("SIGKILL");
      });
    }
    rmSync(cwd, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  };
  try {
    await err.waitFor(/Then: npx faxgate jobs/, 60_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { cwd, child, banner: err.text, stop };
}
