// The daemon's log goes to stdout, which a journal, a container runtime or a test reads when it
// gets round to it. While nothing reads, logging must not stop the process (a synchronous writer
// on the non-blocking fd that Node's Workers leave behind slept 100 ms per EAGAIN with every SMTP
// session waiting): the lines wait in a bounded buffer and all arrive once reading goes on; what
// does not fit is dropped and counted in a line of its own, never silently.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { STDOUT_BUFFER_BYTES } from "../../src/log/logger.js";
import { nextEvent, when } from "../helpers/wait.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  children.length = 0;
});

interface Run {
  lines: Array<{ i?: number; msg: string; lines?: number }>;
  exitCode: number | null;
}

/** Starts the writer, reads nothing until its calls have returned and its loop has turned, then reads all. */
async function writeUnread(lines: number, pad: number): Promise<Run> {
  const env = { ...process.env };
  delete env.FAXGATE_LOG_COPY; // megabytes of test lines, not the suite's secret check's business
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(root, "test/helpers/log-stdout-child.ts"), String(lines), String(pad)],
    { cwd: root, env, stdio: ["ignore", "pipe", "inherit", "ipc"] },
  );
  children.push(child);
  child.stdout!.pause();
  await nextEvent(child, "message", "the writer's calls to return while stdout is not read", (m) =>
    Boolean((m as { written?: number }).written),
  );
  await nextEvent(child, "message", "the writer's event loop to turn while stdout is not read", (m) =>
    Boolean((m as { tick?: number }).tick),
  );
  const chunks: Buffer[] = [];
  child.stdout!.on("data", (d: Buffer) => chunks.push(d));
  child.stdout!.resume();
  // the drop count is written once writing goes on; then the writer may end
  if (lines * pad > STDOUT_BUFFER_BYTES)
    await when(
      () => Buffer.concat(chunks).includes("log lines dropped"),
      (l) => {
        child.stdout!.on("data", l);
        return () => child.stdout!.off("data", l);
      },
      "the line that counts the dropped lines",
      60_000,
    );
  child.send("end");
  const [exitCode] = (await nextEvent(child, "exit", "the writer to exit", () => true, 60_000)) as [number | null];
  await when(
    () => child.stdout!.readableEnded,
    (l) => {
      child.stdout!.on("end", l);
      return () => child.stdout!.off("end", l);
    },
    "the end of the writer's stdout",
  );
  const text = Buffer.concat(chunks).toString("utf8");
  return {
    lines: text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Run["lines"][number]),
    exitCode,
  };
}

describe("the log on stdout while nothing reads it", () => {
  it("does not stop the process, and every line arrives in order once reading goes on", async () => {
    // 6 MB: far more than a socket or pipe holds, within the buffer
    const n = 6_000;
    const run = await writeUnread(n, 1_000);
    expect(run.exitCode).toBe(0);
    const mine = run.lines.filter((l) => l.msg === "line");
    expect(mine.map((l) => l.i)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(run.lines.some((l) => l.msg.startsWith("log lines dropped"))).toBe(false);
  }, 60_000);

  it("drops what does not fit into the buffer and counts it in a line of its own", async () => {
    const n = Math.ceil((STDOUT_BUFFER_BYTES * 1.5) / 1_000);
    const run = await writeUnread(n, 1_000);
    expect(run.exitCode).toBe(0);
    const mine = run.lines.filter((l) => l.msg === "line");
    const counted = run.lines.filter((l) => l.msg.startsWith("log lines dropped"));
    expect(counted).toHaveLength(1);
    expect(mine.length).toBeLessThan(n);
    // what arrived is the lines from the first on, and the count names the rest
    expect(mine.map((l) => l.i)).toEqual(Array.from({ length: mine.length }, (_, i) => i));
    expect(mine.length + counted[0]!.lines!).toBe(n);
  }, 120_000);
});
