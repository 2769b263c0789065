// The SMTP headline rows: faxgate as users run it against a private Postfix, same machine, same
// load, rounds alternating. faxgate is `faxgate start --config` (built, its own process, every
// thread it starts, its dispatcher and notifier sending to the emulator), with the default
// duplicate window; the emulator runs in this process, at the lowest CPU priority. The load
// generator (lib/smtp-blast.mjs: plain node, prebuilt messages, each with its own Message-ID and
// content, so every one is a new job) is the same for both servers, at normal priority. Three
// kinds of mail: a 100 KB PDF attachment with a short body, 1 KB of text only, 100 KB of text
// only; two workloads: twenty sessions each sending message after message on one connection
// (reuse), and one connection per message, twenty at once (connect). Per workload and kind: the
// accept rate's ratio faxgate / Postfix (medians of the rounds), p99 (MAIL FROM -> 250 on a reused
// connection, connect -> 250 with one connection per message), and each server's CPU per mail
// (all its processes and threads, from /proc). Postfix runs with in_flow_delay = 0
// (lib/postfix.ts), and each round's p99 of both is checked: a round where either took a second
// or more for a mail is flagged in the row, since a server that stalls is not being measured.
// FAXGATE_BENCH_MESSAGES (default 1000), FAXGATE_BENCH_SESSIONS (20), FAXGATE_BENCH_ROUNDS (3),
// FAXGATE_BENCH_WARMUP (2000 unmeasured mails to each server first, per workload and kind; 0: none),
// FAXGATE_BENCH_KINDS (all), FAXGATE_BENCH_WORKLOADS (reuse,connect); FAXGATE_BENCH_NODE_ARGS
// adds node flags to the daemon's command.
// FAXGATE_BENCH_CPU_PROF=DIR starts the daemon with --cpu-prof into DIR. Each faxgate round prints
// the daemon's CPU per mail by thread, and the end its CPU by thread since its start (docs/bench.md
// says what they showed).
import { execFile } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DOMAIN, SENDER, startBenchDaemon, HOW } from "./lib/daemon.js";
import { percentile } from "./lib/load.js";
import { postfixTools, startPostfix, type Running } from "./lib/postfix.js";
import { threadCpuMs, treeCpuMs } from "./lib/proc-cpu.js";
import type { BenchResult } from "./types.js";

const MESSAGES = Number(process.env.FAXGATE_BENCH_MESSAGES ?? 1000);
const SESSIONS = Number(process.env.FAXGATE_BENCH_SESSIONS ?? 20);
const ROUNDS = Number(process.env.FAXGATE_BENCH_ROUNDS ?? 3);
/**
 * Mails sent to each server, unmeasured, before a workload and kind's rounds. A daemon that has
 * just started runs its JavaScript unoptimised while V8 compiles the hot paths on its helper
 * threads: `perf` of a fresh daemon on 1 KB mails showed those threads compiling for the first
 * 3-4 s (a quarter of the daemon's CPU on two cores) and nearly idle after. A gateway runs for
 * weeks, so the rows are its rate once warm; the warm-up round's ratio is in each row's note.
 */
const WARMUP = Number(process.env.FAXGATE_BENCH_WARMUP ?? 2000);
const ALL_KINDS = [
  { kind: "pdf", label: "100 KB PDF attachment, short body" },
  { kind: "text1k", label: "1 KB text only" },
  { kind: "text100k", label: "100 KB text only" },
] as const;
/** FAXGATE_BENCH_KINDS=pdf,text1k runs only those kinds (for a profile of one). */
const KINDS = ALL_KINDS.filter(
  (k) => !process.env.FAXGATE_BENCH_KINDS || process.env.FAXGATE_BENCH_KINDS.split(",").includes(k.kind),
);
/** FAXGATE_BENCH_WORKLOADS=connect runs only that workload. */
const WORKLOADS = [
  { workload: "reuse", label: "reused connections", latency: "MAIL FROM -> 250" },
  { workload: "connect", label: "one connection per message", latency: "connect -> 250" },
].filter(
  (w) => !process.env.FAXGATE_BENCH_WORKLOADS || process.env.FAXGATE_BENCH_WORKLOADS.split(",").includes(w.workload),
);
/** A p99 this long means the server stalled in the round (Postfix's in_flow_delay was 1 s). */
const STALL_MS = 1000;
const blast = path.join(path.dirname(fileURLToPath(import.meta.url)), "lib", "smtp-blast.mjs");
const TO = `15551234567@${DOMAIN}`;

interface Round {
  rate: number;
  p99: number;
  cpuMsPerMail: number;
  failures: number;
  /** faxgate's rounds: CPU ms per mail of each of the daemon's threads in this round, most first */
  threads?: string;
}

/** Each thread's CPU in a round, per mail: which thread a change moved work off or onto. */
function threadDeltas(
  before: Array<{ name: string; ms: number }>,
  after: Array<{ name: string; ms: number }>,
  messages: number,
): string {
  const was = new Map(before.map((t) => [t.name, t.ms]));
  return after
    .map((t) => ({ name: t.name, ms: (t.ms - (was.get(t.name) ?? 0)) / messages }))
    .filter((t) => t.ms >= 0.05)
    .sort((a, b) => b.ms - a.ms)
    .map((t) => `${t.name} ${t.ms.toFixed(2)}`)
    .join(", ");
}

async function round(
  port: number,
  workload: string,
  kind: string,
  pid: () => number,
  perThread = false,
  messages = MESSAGES,
): Promise<Round> {
  const threadsBefore = perThread ? threadCpuMs(pid()) : [];
  const before = treeCpuMs(pid());
  const child = execFile(
    process.execPath,
    [blast, String(port), String(SESSIONS), String(messages), kind, SENDER, TO, workload],
    { maxBuffer: 64 << 20, timeout: 600_000 },
  );
  // this process (the emulator) runs at nice 19; the generator at normal priority like the servers
  try {
    os.setPriority(child.pid!, 0);
  } catch {
    // not root: the generator stays at this process's priority
  }
  const stdout = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`smtp-blast exited with ${code}`))));
  });
  const r = JSON.parse(stdout.trim().split("\n").pop()!) as {
    accepted: number;
    seconds: number;
    latencies: number[];
    failures: number;
    firstFailure: string | null;
  };
  const after = treeCpuMs(pid());
  const threads = perThread ? threadDeltas(threadsBefore, threadCpuMs(pid()), messages) : undefined;
  if (r.failures > 0) process.stderr.write(`bench: ${r.failures} refused, the first: ${r.firstFailure}\n`);
  return {
    rate: r.accepted / r.seconds,
    p99: percentile(r.latencies, 99),
    cpuMsPerMail: (after - before) / messages,
    failures: r.failures,
    ...(threads === undefined ? {} : { threads }),
  };
}

const mid = (xs: number[]) => percentile(xs, 50);

export default async function smtpDaemon(): Promise<BenchResult[]> {
  const tools = postfixTools();
  if (tools.postfixUnavailable)
    return [{ figure: "smtp (daemon): skipped", value: 0, unit: "-", note: tools.postfixUnavailable }];
  const prof = process.env.FAXGATE_BENCH_CPU_PROF;
  // FAXGATE_BENCH_NODE_ARGS: more node flags for the daemon (space-separated), to try one
  const nodeArgs = [
    ...(prof ? ["--cpu-prof", `--cpu-prof-dir=${prof}`] : []),
    ...(process.env.FAXGATE_BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? []),
  ];
  // A whole run accepts about 30,000 jobs (warm-ups included), faster than the emulator takes them: queue.maxWaiting's
  // default (10,000) would turn the later rounds into 451s, so the accept rate is measured without it.
  const daemon = await startBenchDaemon({
    emuDelayMs: 200,
    config: ["queue:", "  maxWaiting: 0"],
    ...(nodeArgs.length ? { nodeArgs } : {}),
  });
  let postfix: Running | null = null;
  const priority = os.getPriority();
  try {
    postfix = await startPostfix(tools, DOMAIN);
    os.setPriority(19);
    const pfPid = (): number => postfix!.pid!() ?? NaN;
    const rows: BenchResult[] = [];
    for (const { workload, label: wlabel, latency } of WORKLOADS)
      for (const { kind, label } of KINDS) {
        const fg: Round[] = [];
        const pf: Round[] = [];
        const tag = `${workload} ${kind}`;
        let cold = "";
        if (WARMUP > 0) {
          const wf = await round(daemon.smtpPort, workload, kind, () => daemon.pid, false, WARMUP);
          const wp = await round(postfix.port, workload, kind, pfPid, false, WARMUP);
          cold = `; warm-up (${WARMUP} mails, not in the figure): faxgate ${wf.rate.toFixed(0)}, Postfix ${wp.rate.toFixed(0)} msg/s, ${(wf.rate / wp.rate).toFixed(2)}`;
          process.stderr.write(`bench: ${tag} ${cold.slice(2)}\n`);
        }
        for (let i = 0; i < ROUNDS; i++) {
          // alternating: faxgate first in even rounds, Postfix first in odd ones
          const order = i % 2 === 0 ? (["fg", "pf"] as const) : (["pf", "fg"] as const);
          for (const who of order) {
            if (who === "fg") fg.push(await round(daemon.smtpPort, workload, kind, () => daemon.pid, true));
            else pf.push(await round(postfix.port, workload, kind, pfPid));
          }
          process.stderr.write(
            `bench: ${tag} round ${i + 1}: faxgate ${fg[i]!.rate.toFixed(0)} msg/s p99 ${fg[i]!.p99.toFixed(0)} ms ${fg[i]!.cpuMsPerMail.toFixed(2)} ms CPU/mail, Postfix ${pf[i]!.rate.toFixed(0)} msg/s p99 ${pf[i]!.p99.toFixed(0)} ms ${pf[i]!.cpuMsPerMail.toFixed(2)} ms CPU/mail\n` +
              `bench: ${tag} round ${i + 1}: faxgate's CPU ms per mail by thread: ${fg[i]!.threads}\n`,
          );
        }
        const ratios = fg.map((r, i) => r.rate / pf[i]!.rate);
        // every round of both: a server whose p99 reached a second stalled, and was not measured
        const stalls = [
          ...fg.map((r, i) => (r.p99 >= STALL_MS ? `faxgate round ${i + 1} p99 ${r.p99.toFixed(0)} ms` : "")),
          ...pf.map((r, i) => (r.p99 >= STALL_MS ? `Postfix round ${i + 1} p99 ${r.p99.toFixed(0)} ms` : "")),
        ].filter(Boolean);
        if (stalls.length) process.stderr.write(`bench: ${tag}: STALLED (not a measurement): ${stalls.join("; ")}\n`);
        const stallNote = stalls.length ? `; STALLED, not measured: ${stalls.join("; ")}` : "; no stalled round";
        const load = `${wlabel}, ${MESSAGES} unique mails, ${SESSIONS} at once, ${ROUNDS} alternating rounds`;
        rows.push(
          {
            figure: `smtp (daemon): durable accept rate, ${label}, ${load}`,
            value: +mid(fg.map((r) => r.rate)).toFixed(0),
            unit: "msg/s",
            peer: {
              label: `${postfix.label}, in_flow_delay = 0, the same load`,
              value: +mid(pf.map((r) => r.rate)).toFixed(0),
            },
            goal: ">= 1.0",
            note: `rate ratios of the rounds (${label}): ${ratios.map((x) => x.toFixed(2)).join(", ")}; ${HOW}, emulator at nice 19${stallNote}${cold}`,
          },
          {
            figure: `smtp (daemon): p99 ${latency}, ${label}, ${wlabel}`,
            value: +mid(fg.map((r) => r.p99)).toFixed(1),
            unit: "ms",
            peer: { label: "Postfix", value: +mid(pf.map((r) => r.p99)).toFixed(1) },
            note: `p99 of each round: faxgate ${fg.map((r) => r.p99.toFixed(0)).join(", ")}; Postfix ${pf.map((r) => r.p99.toFixed(0)).join(", ")}`,
          },
          {
            figure: `smtp (daemon): CPU per mail, all processes and threads, ${label}, ${wlabel}`,
            value: +mid(fg.map((r) => r.cpuMsPerMail)).toFixed(2),
            unit: "ms",
            peer: {
              label: "Postfix (master and all its children)",
              value: +mid(pf.map((r) => r.cpuMsPerMail)).toFixed(2),
            },
            note: `faxgate's CPU ms per mail by thread, last round: ${fg.at(-1)?.threads ?? "-"}`,
          },
        );
      }
    const threads = threadCpuMs(daemon.pid);
    process.stderr.write(
      `bench: the daemon's CPU by thread (ms): ${threads
        .slice(0, 10)
        .map((t) => `${t.name} ${t.ms.toFixed(0)}`)
        .join(", ")}\n`,
    );
    return rows;
  } finally {
    os.setPriority(priority);
    await postfix?.stop();
    await daemon.stop();
  }
}
