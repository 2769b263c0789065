// The one runner for outside programs on untrusted input (src/workers/sandboxed-child.ts), with a
// real shell in the sandbox this machine allows: what the office converter and OCR rely on.
import { spawn } from "node:child_process";
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { groupGone, NO_MEMORY_LIMIT, planSandbox, runSandboxed, type SandboxPlan } from "../../src/workers/index.js";

let dir: string;
let plan: SandboxPlan;
beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-sandboxed-"));
  plan = await planSandbox({ mode: "auto", command: "/bin/sh" });
  // a root daemon's child runs as the converter's user: its folder is its own, as the callers make it
  if (plan.runAs) chownSync(dir, plan.runAs.uid, plan.runAs.gid);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Live processes whose command line contains `text`. */
function running(text: string): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("runSandboxed", () => {
  it("gives the child only its own folder, none of our environment, and its output and status", async () => {
    process.env.FAXGATE_TEST_SECRET = "s3cret-should-not-pass";
    try {
      const r = await runSandboxed({
        argv: ["/bin/sh", "-c", 'env; echo made > "$PWD/out.txt"; exit 3'],
        files: [dir],
        limits: { timeoutMs: 30_000, memoryMb: 256 },
        plan,
        env: { EXTRA: "given" },
      });
      expect(r.code).toBe(3);
      expect(r.timedOut).toBe(false);
      expect(r.output).toContain("EXTRA=given");
      expect(r.output).toContain(`HOME=${dir}`);
      expect(r.output).not.toContain("FAXGATE_TEST_SECRET");
      expect(readFileSync(path.join(dir, "out.txt"), "utf8")).toBe("made\n");
    } finally {
      delete process.env.FAXGATE_TEST_SECRET;
    }
  });

  it("past its time limit the whole group is killed, what it started included", async () => {
    const marker = `faxgate-sandboxed-${process.pid}-${Date.now()}`;
    const children = new Set<number>();
    // without a sandbox: bubblewrap's own pid namespace would end the grandchild anyway, and what
    // is shown here is the runner's group kill, which is all there is under unshare or none
    const open = await planSandbox({ mode: "off", command: "/bin/sh" });
    const r = await runSandboxed({
      // a grandchild of its own in the background, then the child waits: both must go
      argv: ["/bin/sh", "-c", `/bin/sh -c 'sleep 600; :' ${marker} & sleep 600`],
      files: [dir],
      limits: { timeoutMs: 1500, memoryMb: 256 },
      plan: open,
      children,
    });
    expect(r.timedOut).toBe(true);
    expect(children.size).toBe(0);
    expect(running(marker)).toEqual([]);
  });

  it("runs under its memory limit: a child that needs more fails, the daemon does not", async () => {
    writeFileSync(path.join(dir, "big.sh"), 'x=$(head -c 300000000 /dev/zero | tr "\\0" a); echo ${#x}\n');
    if (plan.runAs) chownSync(path.join(dir, "big.sh"), plan.runAs.uid, plan.runAs.gid);
    const r = await runSandboxed({
      argv: ["/bin/sh", path.join(dir, "big.sh")],
      files: [dir],
      limits: { timeoutMs: 60_000, memoryMb: 64 },
      plan,
    });
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBe(NO_MEMORY_LIMIT);
    expect(r.output).not.toContain("300000000");
  });
});

describe("spawnSandboxed when the daemon dies", () => {
  const CHILD = path.join(import.meta.dirname, "../helpers/sandbox-parent-child.ts");

  // "off": nothing but the watcher ends the group (no bubblewrap); "auto": the sandbox this machine
  // allows. "at once": killed as soon as the child is spawned, the instant before bubblewrap arms
  // its --die-with-parent, which then never fires (seen here: the group lives on without the watcher)
  for (const mode of ["off", "auto"] as const)
    for (const when of ["at once", "once it runs"] as const)
      it(`sandbox ${mode}, killed ${when}: a daemon killed with SIGKILL takes the child's whole group with it`, async () => {
        const marker = `faxgate-orphan-${process.pid}-${Date.now()}`;
        const daemon = spawn(process.execPath, ["--import", "tsx", CHILD, mode, dir], {
          stdio: ["ignore", "pipe", "inherit"],
          env: { ...process.env, FAXGATE_TEST_MARKER: marker },
        });
        const ended = new Promise((resolve) => daemon.on("exit", resolve));
        const pgid = await new Promise<number>((resolve, reject) => {
          let out = "";
          daemon.stdout.on("data", (b: Buffer) => {
            out += b.toString();
            const m = /group (\d+)/.exec(out);
            if (m) resolve(Number(m[1]));
          });
          daemon.on("exit", (code) => reject(new Error(`the stand-in ended first (${code})`)));
        });
        try {
          // running, grandchild included, while the daemon lives
          if (when === "once it runs")
            await expect.poll(() => running(marker).length, { timeout: 15_000 }).toBeGreaterThan(0);
          daemon.kill("SIGKILL");
          await ended;
          expect(await groupGone(pgid, 10_000)).toBe(true);
          expect(running(marker)).toEqual([]);
        } finally {
          try {
            process.kill(-pgid, "SIGKILL");
          } catch {
            // gone, as it should be
          }
        }
      });
});
