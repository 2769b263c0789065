// Mailbox intake: how long from a message's APPEND into the watched folder until its job is
// committed (the daemon's QUEUED line), with IDLE. The real daemon (`faxgate start --config`)
// against a private Dovecot on loopback; messages one at a time, so each is a wake-up from IDLE.
import { rmSync } from "node:fs";
import { dovecotMissing, startDovecot } from "../test/helpers/dovecot.js";
import { disposeRig, makeRig, startDaemon } from "../test/faults/harness.js";
import type { BenchResult } from "./types.js";

const MESSAGES = 20;
const QUEUED = /"component":"imap"[^\n]*"msg":"QUEUED"/g;
const MOVED = /"msg":"mailbox message moved"/g;

/** Waits until `re` (global) has matched `n` times in the daemon's output. */
async function seen(out: { text: string }, re: RegExp, n: number, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((out.text.match(re) ?? []).length < n) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${n} x ${re}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function message(i: number): string {
  return [
    "Authentication-Results: mx.example.net; dkim=pass header.d=example.com; dmarc=pass header.from=example.com",
    "From: alice@example.com",
    `To: fax+1555123${String(4000 + i)}@example.com`,
    `Subject: Bench ${i}`,
    `Message-ID: <bench-${i}-${Date.now()}@example.com>`,
    `Date: ${new Date().toUTCString()}`,
    "Content-Type: text/plain; charset=utf-8",
    "",
    `Letter ${i}.`,
    "",
  ].join("\r\n");
}

export default async function run(): Promise<BenchResult[]> {
  const missing = dovecotMissing();
  if (missing)
    return [{ figure: "mailbox message -> job p50 (IDLE)", value: 0, unit: "ms", note: `skipped: ${missing}` }];
  const dovecot = await startDovecot({ fax: "bench-secret-1" });
  const rig = await makeRig({
    config: {
      imap: {
        mailboxes: [
          {
            host: "127.0.0.1",
            port: dovecot.port,
            tls: "off",
            user: "fax",
            password: "bench-secret-1",
            address: "fax@example.com",
            trustedAuthservIds: ["mx.example.net"],
            pollInterval: "10m",
          },
        ],
      },
    },
  });
  const daemon = await startDaemon(rig);
  const times: number[] = [];
  try {
    await daemon.out.waitFor(/"msg":"mailbox watched"/);
    const writer = await dovecot.client("fax", "bench-secret-1");
    for (let i = 0; i < MESSAGES + 2; i++) {
      const t0 = performance.now();
      await writer.append("INBOX", message(i));
      await seen(daemon.out, QUEUED, i + 1);
      // the first two start the reader threads and the connection's IDLE: not measured
      if (i >= 2) times.push(performance.now() - t0);
      // the next message arrives once the intake is back in IDLE, as mail arrives in an office
      await seen(daemon.out, MOVED, i + 1);
    }
    await writer.logout();
  } finally {
    await disposeRig(rig, daemon);
    await dovecot.dispose();
    rmSync(rig.dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  const p50 = times[Math.floor(times.length / 2)]!;
  return [
    {
      figure: "mailbox message -> job p50 (IDLE)",
      value: Math.round(p50),
      unit: "ms",
      goal: "<= 1000",
      note: `mailbox: ${MESSAGES} messages one at a time into a private Dovecot, APPEND to the daemon's QUEUED line; daemon from the test harness (faxgate start --config); max ${Math.round(times[times.length - 1]!)} ms`,
    },
  ];
}
