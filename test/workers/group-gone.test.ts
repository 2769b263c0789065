// groupGone (src/workers/sandbox.ts): a converter stopped or ended counts as ended once nothing of
// its process group is alive, not when its leader's end is seen; zombies, which an orphan's
// reaper may never collect, do not hold it up.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { groupGone, killGroup } from "../../src/workers/index.js";
import { waitUntil } from "../helpers/wait.js";

/** The states of the processes in group `pgid` ("S", "R", "Z"...), from /proc. */
function groupStates(pgid: number): string[] {
  const states: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) === pgid) states.push(f[0]!);
    } catch {
      // gone meanwhile
    }
  }
  return states;
}

/** A detached shell (a process group of its own) running `script`; resolves with its pid once it closed. */
function detached(script: string): { pid: number; closed: Promise<void> } {
  const child = spawn("/bin/sh", ["-c", script], { detached: true, stdio: "ignore" });
  return { pid: child.pid!, closed: new Promise((resolve) => child.once("close", () => resolve())) };
}

describe("groupGone", () => {
  it("waits for a member that outlives the group's leader", async () => {
    // the leader ends at once; its child goes on in the group for a moment
    const g = detached("sleep 0.6 & exit 0");
    await g.closed;
    expect(
      groupStates(g.pid).filter((s) => s !== "Z"),
      "a member alive when the leader is seen to end",
    ).not.toEqual([]);
    expect(await groupGone(g.pid)).toBe(true);
    expect(groupStates(g.pid).filter((s) => s !== "Z")).toEqual([]);
  });

  it("says false past its time limit while the group lives, true once it is killed", async () => {
    const g = detached("sleep 30 & sleep 30");
    expect(await groupGone(g.pid, 100)).toBe(false);
    killGroup(g.pid);
    expect(await groupGone(g.pid)).toBe(true);
    await g.closed;
  });

  it("does not wait for zombies", async () => {
    // A child in a group of its own (setsid) that ends at once, under a parent (the exec'd sleep)
    // that never collects it: a group whose only member is a zombie, as an orphan is whose reaper
    // never collects (node as a container's pid 1).
    const parent = spawn("/bin/sh", ["-c", "setsid sleep 0 & echo $!; exec sleep 30"], {
      detached: true,
      stdio: ["ignore", "pipe", "ignore"],
    });
    try {
      const zombie = Number(
        await new Promise<string>((resolve) => parent.stdout!.once("data", (b) => resolve(String(b)))),
      );
      await waitUntil(() => groupStates(zombie).join() === "Z", "the child a zombie, alone in its group", 10_000, 10);
      expect(await groupGone(zombie, 2000)).toBe(true);
    } finally {
      killGroup(parent.pid!);
    }
  });
});
