// Memory under big mail: 20 SMTP sessions each send a 25 MB message at once to the real daemon
// (its own process, default config, the emulator behind it), and the daemon's RSS is read from
// /proc: its level after start and one warm-up message, and its high-water mark (VmHWM, reset
// before the burst) until the last 250. The issue asks that the messages not grow the process by
// more than their streaming buffers; the peer is the 500 MB of mail itself, so the ratio is the
// growth as a share of the mail (0.05 = 5 % of the mail's size was ever resident at once).
// The client side writes each message from a few constant lines (test/smtp/big-message.ts) and
// holds almost nothing. The daemon starts sending the jobs to the service while the burst is still
// arriving, as in production; their uploads stream from disk and count in the peak.
// The daemon runs built (as in production) unless FAXGATE_BENCH_SOURCE=1 runs it through tsx:
// tsx's loader holds about 200 MB more at rest, and as much again in each reader thread that starts
// during the burst, which would count as growth.
// Run alone: node --import tsx bench/smtp-memory.bench.ts
import { pathToFileURL } from "node:url";
import { sendBig } from "../test/smtp/big-message.js";
import { DOMAIN, HOW, memoryOf, resetPeak, startBenchDaemon } from "./lib/daemon.js";
import type { BenchResult } from "./types.js";

const SESSIONS = 20;
const SIZE = 25_000_000;

export default async function bench(): Promise<BenchResult[]> {
  // a long processing time: the emulator's status answers stay trivial during the burst
  const d = await startBenchDaemon({ emuDelayMs: 60_000 });
  try {
    // one message first, unmeasured: code paths loaded, the user's preferences cached
    const warm = await sendBig(d.smtpPort, `15551230999@${DOMAIN}`, 200_000, 999);
    if (!/^250 /.test(warm)) throw new Error(`warm-up not accepted: ${warm}`);
    await new Promise((r) => setTimeout(r, 2000));
    const before = memoryOf(d.pid).rss;
    const exactPeak = resetPeak(d.pid);
    let sampledPeak = before;
    const timer = setInterval(() => {
      try {
        sampledPeak = Math.max(sampledPeak, memoryOf(d.pid).rss);
      } catch {
        // the daemon is gone; the replies below say why
      }
    }, 20);
    const started = Date.now();
    let replies: string[];
    try {
      replies = await Promise.all(
        Array.from({ length: SESSIONS }, (_, i) =>
          sendBig(d.smtpPort, `1555123${String(1000 + i)}@${DOMAIN}`, SIZE, i),
        ),
      );
    } finally {
      clearInterval(timer);
    }
    const seconds = (Date.now() - started) / 1000;
    const bad = replies.filter((r) => !/^250 2\.0\.0 queued as /.test(r));
    if (bad.length > 0) throw new Error(`${bad.length} of ${SESSIONS} big messages not queued: ${bad[0]}`);
    const peak = exactPeak ? memoryOf(d.pid).hwm : sampledPeak;
    const mail = SESSIONS * SIZE;
    const how = exactPeak ? "VmHWM" : "RSS sampled every 20 ms";
    return [
      {
        figure: `memory: daemon RSS growth, ${SESSIONS} x ${SIZE / 1e6} MB at once (${how} - before)`,
        value: Math.round((peak - before) / 1e6),
        unit: "MB",
        peer: { label: "the mail itself", value: mail / 1e6 },
        goal: "<= 0.1 (streaming buffers only)",
      },
      {
        figure: `memory: daemon peak RSS in that burst (${HOW}, ${Math.round(before / 1e6)} MB before)`,
        value: Math.round(peak / 1e6),
        unit: "MB",
      },
      { figure: `memory: time to queue the ${SESSIONS} x ${SIZE / 1e6} MB`, value: seconds, unit: "s" },
    ];
  } finally {
    await d.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const r of await bench())
    console.log(
      `${r.figure}: ${r.value.toFixed(1)} ${r.unit}${r.peer ? ` (peer ${r.peer.value} ${r.unit}, ${r.peer.label})` : ""}`,
    );
}
