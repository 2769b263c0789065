// Time from the 250 to the service send: the real daemon (its own process) with the emulator
// (delay 0) behind it; bench/smtp-load.ts sends mail with a real one-page PDF, each to its own fax
// number, and notes the wall-clock moment of every 250 with its queue id (the job id). The emulator
// records when it created each fax (createdAt, after the upload arrived and the document was
// built) with the job id in the fax's custom fields (cf.faxgateJob); the difference is the time a
// job waits in the queue plus the send call itself. Two runs:
// - a burst: 200 mails over 10 sessions, the API gate opened wide (concurrency 16, 1000/s) so that
//   what is measured is the pipeline, not the configured rate limit;
// - a light stream: one mail every 300 ms on one session, with the default API settings
//   (concurrency 4, 5/s), what a small office sees.
// Both keep queue.pollInterval at its default (10 s): jobs do not wait for a poll, because the
// store wakes the dispatcher when a job is queued; the interval only paces status polls.
// Run alone: node --import tsx bench/send-latency.bench.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { TEST_PDF } from "../test/helpers/store.js";
import { DOMAIN, SENDER, startBenchDaemon, type BenchDaemonOptions } from "./lib/daemon.js";
import { percentile, runSmtpLoad, type LoadOptions } from "./lib/load.js";
import type { BenchResult } from "./types.js";
import { defaultConfig } from "../test/helpers/collaborators.js";

const BURST = { sessions: 10, messages: 200 };
const STREAM = { sessions: 1, messages: 20, gapMs: 300 };
const WIDE_API = { concurrency: 16, ratePerSecond: 1000 };

/** Milliseconds from each 250 to the fax's creation at the service, for every measured mail. */
async function measure(
  daemon: BenchDaemonOptions,
  load: Omit<LoadOptions, "port" | "from" | "to" | "pdfFile">,
  pdfFile: string,
): Promise<number[]> {
  const d = await startBenchDaemon(daemon);
  try {
    // "{i}" -> 1000 + n: each mail has its own number (one fax per number at a time), and none
    // ends in 0000-0003, the emulator's failing numbers
    const r = await runSmtpLoad({ ...load, port: d.smtpPort, from: SENDER, to: `1555300{i}@${DOMAIN}`, pdfFile });
    if (r.accepted !== load.messages || r.replies.some((x) => !x.id))
      throw new Error(`only ${r.accepted} of ${load.messages} queued`);
    const want = new Map(r.replies.map((x) => [x.id!, x.at]));
    const end = Date.now() + 90_000;
    for (;;) {
      const created = new Map<string, number>();
      for (const f of await d.faxes()) {
        const job = f.cf?.faxgateJob;
        if (job && want.has(job)) created.set(job, Date.parse(f.createdAt));
      }
      if (created.size === want.size) return [...want].map(([id, at]) => created.get(id)! - at);
      if (Date.now() > end) throw new Error(`only ${created.size} of ${want.size} faxes reached the service in 90 s`);
      await new Promise((res) => setTimeout(res, 250));
    }
  } finally {
    await d.stop();
  }
}

export default async function bench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-"));
  const pdfFile = path.join(dir, "letter.pdf");
  writeFileSync(pdfFile, TEST_PDF);
  const poll = defaultConfig().queue.pollInterval / 1000;
  try {
    const burst = await measure({ emuDelayMs: 0, api: WIDE_API }, BURST, pdfFile);
    const stream = await measure({ emuDelayMs: 0 }, STREAM, pdfFile);
    const burstLabel = `burst ${BURST.messages} over ${BURST.sessions} sessions, api ${WIDE_API.concurrency} / ${WIDE_API.ratePerSecond}/s, poll ${poll} s (default)`;
    const streamLabel = `1 mail / ${STREAM.gapMs} ms, default api 4 / 5/s, poll ${poll} s (default)`;
    return [
      { figure: `250 -> fax at the service, p50, ${burstLabel}`, value: Math.round(percentile(burst, 50)), unit: "ms" },
      { figure: `250 -> fax at the service, p99, ${burstLabel}`, value: Math.round(percentile(burst, 99)), unit: "ms" },
      {
        figure: `250 -> fax at the service, p50, ${streamLabel}`,
        value: Math.round(percentile(stream, 50)),
        unit: "ms",
      },
      {
        figure: `250 -> fax at the service, max of ${STREAM.messages}, ${streamLabel}`,
        value: Math.round(Math.max(...stream)),
        unit: "ms",
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const r of await bench()) console.log(`${r.figure}: ${r.value} ${r.unit}`);
}
