// E-mail intake speed, each answer 250 only once the message is durably queued in a real store:
// - the headline: Postfix's own load generator, smtp-source (20 sessions, 2,000 messages of about
//   100 KB: a text part and a PDF attachment, sent from one prepared file with -F, a connection
//   per message) drives faxgate and then a private Postfix (its 250 also means the queue file is
//   fsynced; bench/lib/postfix.ts) with the very same command; msg/s, faxgate against Postfix,
//   in rounds after two warm-up runs each (the steady state a running daemon is in), and the
//   first run after the start on its own.
// - p99 MAIL FROM -> 250 at a steady 100 msg/s (bench/smtp-load.ts paced), against the goal 50 ms,
//   and against Postfix under the same paced load (what the load generator and the machine add).
// - the burst through the Node load generator (600 messages) against Postfix and smtp-sink (the
//   ceiling: no work at all), and the bench process's RSS.
// Without Postfix or smtp-source the rows that need them are left out and a note says why.
// Run alone: node --import tsx bench/smtp-accept.bench.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { faxgateModule } from "./lib/daemon.js";
import { diskCounter, type DiskCounts } from "./lib/disk.js";
import { percentile, runSmtpLoad, type LoadResult } from "./lib/load.js";
import {
  postfixTools,
  runSmtpSource,
  startPostfix,
  startSmtpSink,
  type PostfixTools,
  type Running,
} from "./lib/postfix.js";
import { benchUser, stubApi } from "./lib/stub-service.js";
import type { BenchResult } from "./types.js";
import { benchSmtpGateway } from "./lib/smtp-gateway.js";

const SESSIONS = 20;
const MESSAGES = 600;
/** smtp-source's run, as the issue measured it */
const SOURCE_MESSAGES = 2000;
/** the steady load of the latency row */
const PACED_RATE = 100;
const PACED_MESSAGES = 1000;
const DOMAIN = "fax.example.com";
const POSTFIX_ISSUE_FIGURE = 570;
/** FAXGATE_BENCH_ROUNDS overrides; the median round is reported */
const ROUNDS = Number(process.env.FAXGATE_BENCH_ROUNDS) || 3;
/** smtp-source runs against each server before its measured rounds (see bench()) */
const WARMUP_RUNS = 2;
const USER = benchUser();

interface Measured {
  label: string;
  rate: number;
  p99: number;
}

function measured(label: string, r: LoadResult): Measured {
  if (r.accepted !== MESSAGES) throw new Error(`${label}: only ${r.accepted} of ${MESSAGES} accepted`);
  return { label, rate: r.accepted / r.seconds, p99: percentile(r.latencies, 99) };
}

/** The same load against a server started for it, stopped whatever happens. */
async function against(start: () => Promise<Running>): Promise<Measured> {
  const server = await start();
  try {
    return measured(
      server.label,
      await runSmtpLoad({ port: server.port, sessions: SESSIONS, messages: MESSAGES, from: USER.email }),
    );
  } finally {
    await server.stop();
  }
}

// built, as the daemon runs (FAXGATE_BENCH_SOURCE=1: from source through tsx)
const { configSchema } = await faxgateModule<typeof import("../src/config/schema.js")>("config/schema");
const { SqliteStore } = await faxgateModule<typeof import("../src/store/sqlite/store.js")>("store/sqlite/store");
const { ReaderPool } = await faxgateModule<typeof import("../src/intake/reader-pool.js")>("intake/reader-pool");

interface Gateway {
  port: number;
  /** jobs in the store (duplicates are none: the bench store forgets each message at once) */
  jobs(): Promise<number>;
  rssBefore: number;
  stop(): Promise<void>;
}

/** faxgate's receiver in this process, on a fresh store, as the daemon wires it. */
async function startFaxgate(): Promise<Gateway> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-"));
  // smtp-source sends one file again and again, which faxgate would rightly answer as the same
  // message delivered twice (no new job, nothing written). A window of -1 ms forgets every
  // message at once: each one is a new job with its message and document written and flushed
  // to disk (in the store's database: both are small), as Postfix writes a queue file for each.
  // The WAL checkpoint thread starts with the store, as in the daemon (store/open.ts), not on the
  // 150th commit in the middle of the paced run.
  const store = SqliteStore.open({ dataDir: path.join(dir, "data"), dedupeWindowMs: -1, threadsNow: true });
  const smtp = {
    ...configSchema.parse({ smtp: { listen: ["127.0.0.1:0"], domains: [DOMAIN] } }).smtp!,
    maxMessagesPerMinute: 1_000_000,
    maxConnections: 100,
    maxConnectionsPerClient: 100,
  };
  // the daemon's reader threads (HTML bodies, PDFs); the MIME is split as DATA arrives
  const readers = new ReaderPool();
  const gateway = await benchSmtpGateway(
    {
      smtp,
      users: [USER],
      dataDir: path.join(dir, "data"),
      store,
      clientFor: () => stubApi,
      readers,
    },
    faxgateModule,
  );
  const [addr] = await gateway.listen();
  return {
    port: addr!.port,
    rssBefore: process.memoryUsage().rss,
    jobs: async () => {
      const c = await store.counts();
      return Object.values(c.jobs).reduce((a, b) => a + b, 0);
    },
    async stop() {
      await gateway.close({ timeoutMs: 1000 });
      await readers.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function ours(): Promise<Measured & { rssBefore: number; peakRss: number }> {
  const g = await startFaxgate();
  let peakRss = g.rssBefore;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    // the load comes from another process, as smtp-source's does for Postfix
    const r = await runSmtpLoad({ port: g.port, sessions: SESSIONS, messages: MESSAGES, from: USER.email });
    if (!r.replies.every((x) => x.id !== null)) throw new Error('a 250 without "queued as"');
    return { ...measured("faxgate", r), rssBefore: g.rssBefore, peakRss };
  } finally {
    clearInterval(timer);
    await g.stop();
  }
}

/** The prepared message smtp-source sends (-F): LF line ends (it sends CRLF), ~100 KB with a PDF. */
function sourceMessage(dir: string): string {
  const pdf = Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(73_000, 0x20), Buffer.from("\n%%EOF\n")]);
  const b64 = pdf.toString("base64").replace(/.{76}/g, "$&\n");
  const file = path.join(dir, "message.eml");
  writeFileSync(
    file,
    `From: ${USER.email}\nTo: 15551234567@${DOMAIN}\nSubject: bench\nMIME-Version: 1.0\n` +
      `Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nbench\n--B\nContent-Type: application/pdf; name=doc.pdf\n` +
      `Content-Disposition: attachment; filename=doc.pdf\nContent-Transfer-Encoding: base64\n\n${b64}\n--B--\n`,
  );
  return file;
}

/** faxgate under smtp-source; every message must have become a job. */
async function faxgateUnderSmtpSource(tools: PostfixTools, file: string): Promise<number> {
  const g = await startFaxgate();
  try {
    const rate = await runSmtpSource(tools, {
      port: g.port,
      sessions: SESSIONS,
      messages: SOURCE_MESSAGES,
      file,
      from: USER.email,
      to: `15551234567@${DOMAIN}`,
    });
    const jobs = await g.jobs();
    if (jobs !== SOURCE_MESSAGES + SESSIONS)
      throw new Error(`faxgate under smtp-source: ${jobs} jobs for ${SOURCE_MESSAGES + SESSIONS} messages`);
    return rate;
  } finally {
    await g.stop();
  }
}

async function postfixUnderSmtpSource(tools: PostfixTools, file: string): Promise<{ rate: number; label: string }> {
  const pf = await startPostfix(tools, DOMAIN);
  try {
    return {
      rate: await runSmtpSource(tools, {
        port: pf.port,
        sessions: SESSIONS,
        messages: SOURCE_MESSAGES,
        file,
        from: USER.email,
        to: `15551234567@${DOMAIN}`,
      }),
      label: pf.label,
    };
  } finally {
    await pf.stop();
  }
}

/** The disk that holds the temp folders (both servers keep their queues there), if it can be counted. */
const disk = diskCounter(os.tmpdir());

/**
 * p99 of MAIL FROM -> 250 at a steady PACED_RATE msg/s, against a server started for it, and the
 * disk's write and flush requests a message meanwhile (the load only, not the server's start).
 */
async function pacedP99(
  start: () => Promise<{ port: number; stop(): Promise<void> }>,
): Promise<{ p99: number; disk: DiskCounts | null }> {
  const server = await start();
  try {
    const before = "read" in disk ? disk.read() : null;
    const r = await runSmtpLoad({
      port: server.port,
      sessions: SESSIONS,
      messages: PACED_MESSAGES,
      from: USER.email,
      rate: PACED_RATE,
    });
    const after = "read" in disk ? disk.read() : null;
    if (r.accepted !== PACED_MESSAGES) throw new Error(`paced load: only ${r.accepted} of ${PACED_MESSAGES} accepted`);
    const perMessage =
      before && after
        ? {
            writes: (after.writes - before.writes) / PACED_MESSAGES,
            flushes: (after.flushes - before.flushes) / PACED_MESSAGES,
          }
        : null;
    return { p99: percentile(r.latencies, 99), disk: perMessage };
  } finally {
    await server.stop();
  }
}

/** The middle value of the rounds (the upper one of two). */
const mid = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

/** The median round by rate; its p99 is the median of the rounds' p99s (each figure on its own). */
function median<T extends Measured>(rounds: T[]): T {
  const byRate = [...rounds].sort((x, y) => x.rate - y.rate)[Math.floor(rounds.length / 2)]!;
  return { ...byRate, p99: mid(rounds.map((r) => r.p99)) };
}

export default async function bench(): Promise<BenchResult[]> {
  const tools = postfixTools();
  const notes: string[] = [];
  const rows: BenchResult[] = [];

  // The headline: smtp-source, the same command against both, rounds alternating.
  if (tools.postfixUnavailable || !tools.smtpSource) {
    notes.push(
      `no smtp-source row: ${tools.postfixUnavailable ?? "smtp-source not found (it comes with the postfix package)"}`,
    );
  } else {
    const tmp = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-msg-"));
    try {
      const file = sourceMessage(tmp);
      // A daemon runs for days; its first seconds are V8 compiling the receiver's code on the same
      // two cores (helper threads busy with TurboFan, code not yet optimized). So the rounds that
      // make the goal's row come after warm-up runs, each server getting the very same ones; the
      // first run after the process started is reported on its own, against Postfix's first.
      const first = { faxgate: 0, postfix: 0 };
      let label = "Postfix";
      for (let run = 0; run < WARMUP_RUNS; run++) {
        const f = await faxgateUnderSmtpSource(tools, file);
        const p = await postfixUnderSmtpSource(tools, file);
        if (run === 0) Object.assign(first, { faxgate: f, postfix: p.rate });
      }
      const fg: number[] = [];
      const pfx: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        fg.push(await faxgateUnderSmtpSource(tools, file));
        const p = await postfixUnderSmtpSource(tools, file);
        pfx.push(p.rate);
        label = p.label;
      }
      process.stderr.write(
        `bench: smtp-source msg/s faxgate (first run ${first.faxgate.toFixed(0)}; rounds after ${WARMUP_RUNS} warm-up runs: ${fg.map((x) => x.toFixed(0)).join(", ")}), Postfix (first run ${first.postfix.toFixed(0)}; rounds: ${pfx.map((x) => x.toFixed(0)).join(", ")})\n`,
      );
      const sourceLoad = `${SESSIONS} sessions, ${SOURCE_MESSAGES} x 100 KB + PDF`;
      rows.push(
        {
          figure: `smtp: durable accept rate under smtp-source, ${sourceLoad}, after ${WARMUP_RUNS} warm-up runs`,
          value: mid(fg),
          unit: "msg/s",
          peer: { label: `${label} under the same smtp-source command`, value: mid(pfx) },
          goal: ">= 1.0",
        },
        {
          figure: `smtp: the same, the first run after the process started (V8 still compiling)`,
          value: first.faxgate,
          unit: "msg/s",
          peer: { label: `${label}'s first run`, value: first.postfix },
        },
      );
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  // The paced p99 against its goal, and Postfix under the very same paced load in alternating
  // rounds: what the load generator and the machine alone add to a p99 at this pace.
  const p99s: number[] = [];
  const pfP99s: number[] = [];
  const disks: DiskCounts[] = [];
  const pfDisks: DiskCounts[] = [];
  let pacedPeer = "Postfix";
  for (let round = 0; round < ROUNDS; round++) {
    const me = await pacedP99(startFaxgate);
    p99s.push(me.p99);
    if (me.disk) disks.push(me.disk);
    if (!tools.postfixUnavailable) {
      const them = await pacedP99(async () => {
        const pf = await startPostfix(tools, DOMAIN);
        pacedPeer = pf.label;
        return pf;
      });
      pfP99s.push(them.p99);
      if (them.disk) pfDisks.push(them.disk);
    }
  }
  process.stderr.write(
    `bench: p99 at ${PACED_RATE} msg/s (rounds: ${p99s.map((x) => x.toFixed(0)).join(", ")} ms${pfP99s.length > 0 ? `; Postfix ${pfP99s.map((x) => x.toFixed(0)).join(", ")} ms` : ""})\n`,
  );
  const paced = `at a steady ${PACED_RATE} msg/s (${SESSIONS} sessions, ${PACED_MESSAGES} messages)`;
  rows.push({
    figure: `smtp: p99 MAIL FROM -> 250 ${paced}`,
    value: Math.round(mid(p99s)),
    unit: "ms",
    peer: { label: "the goal", value: 50 },
    goal: "<= 1.0",
  });
  if (pfP99s.length > 0) {
    rows.push({
      figure: `smtp: that p99 against Postfix ${paced}`,
      value: Math.round(mid(p99s)),
      unit: "ms",
      peer: { label: `${pacedPeer}, the same paced load`, value: Math.round(mid(pfP99s)) },
    });
  }
  // What the disk was asked for a message under that load: counts, not times, so they hold still
  // on a machine whose disk and CPU do not.
  if ("unavailable" in disk) notes.push(`no disk rows: ${disk.unavailable}`);
  else if (disks.length > 0) {
    process.stderr.write(
      `bench: disk a message at ${PACED_RATE} msg/s, flushes (rounds: ${disks.map((d) => d.flushes.toFixed(1)).join(", ")}${pfDisks.length > 0 ? `; Postfix ${pfDisks.map((d) => d.flushes.toFixed(1)).join(", ")}` : ""}), writes (rounds: ${disks.map((d) => d.writes.toFixed(1)).join(", ")}${pfDisks.length > 0 ? `; Postfix ${pfDisks.map((d) => d.writes.toFixed(1)).join(", ")}` : ""})\n`,
    );
    const peer = (pick: (d: DiskCounts) => number) =>
      pfDisks.length > 0
        ? { peer: { label: `${pacedPeer}, the same paced load`, value: +mid(pfDisks.map(pick)).toFixed(2) } }
        : {};
    rows.push({
      figure: `smtp: disk cache flushes a message ${paced} (the device's count)`,
      value: +mid(disks.map((d) => d.flushes)).toFixed(2),
      unit: "flushes",
      ...peer((d) => d.flushes),
    });
    rows.push({
      figure: `smtp: disk writes a message ${paced} (the device's count)`,
      value: +mid(disks.map((d) => d.writes)).toFixed(2),
      unit: "writes",
      ...peer((d) => d.writes),
    });
  }

  if (tools.postfixUnavailable) notes.push(tools.postfixUnavailable);
  if (!tools.smtpSink && tools.postfix)
    notes.push("smtp-sink not found (it comes with the postfix package): no ceiling row");
  // Rounds alternate faxgate, Postfix and smtp-sink so that other work on the machine weighs on all
  // three alike; each figure is the median of its rounds.
  const mine: Array<Awaited<ReturnType<typeof ours>>> = [];
  const pf: Measured[] = [];
  const sinks: Measured[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    mine.push(await ours());
    if (!tools.postfixUnavailable) {
      pf.push(await against(() => startPostfix(tools, DOMAIN)));
    }
    if (tools.smtpSink) sinks.push(await against(() => startSmtpSink(tools)));
  }
  const me = median(mine);
  const peakRss = Math.max(...mine.map((m) => m.peakRss));
  const postfix = pf.length > 0 ? median(pf) : null;
  const sink = sinks.length > 0 ? median(sinks) : null;
  const spread = (xs: Measured[]) => (xs.length > 1 ? ` (rounds: ${xs.map((x) => x.rate.toFixed(0)).join(", ")})` : "");
  process.stderr.write(`bench: smtp msg/s faxgate${spread(mine)}, Postfix${spread(pf)}, smtp-sink${spread(sinks)}\n`);

  const load = `${SESSIONS} sessions, ${MESSAGES} x 100 KB + PDF`;
  const samePf = postfix ? `${postfix.label}, same load` : "";
  const sameSink = sink ? `${sink.label}, same load` : "";
  const peerRate = postfix
    ? { label: samePf, value: postfix.rate }
    : { label: "Postfix: the issue's figure, not measured here", value: POSTFIX_ISSUE_FIGURE };
  const note = notes.length > 0 ? notes.join("; ") : undefined;
  rows.push(
    {
      figure: `smtp: durable accept rate, burst from the Node load generator, ${load}`,
      value: me.rate,
      unit: "msg/s",
      peer: peerRate,
      note,
    },
    {
      figure: "smtp: p99 MAIL FROM -> 250 in that burst",
      value: Math.round(me.p99),
      unit: "ms",
      ...(postfix ? { peer: { label: samePf, value: Math.round(postfix.p99) } } : {}),
    },
  );
  if (sink) {
    rows.push(
      {
        figure: "smtp: durable accept rate, against the ceiling",
        value: me.rate,
        unit: "msg/s",
        peer: { label: sameSink, value: sink.rate },
      },
      {
        figure: "smtp: p99 MAIL FROM -> 250, against the ceiling",
        value: Math.round(me.p99),
        unit: "ms",
        peer: { label: sameSink, value: Math.round(sink.p99) },
      },
    );
  }
  rows.push(
    {
      figure: `smtp: peak RSS of the bench process (in-process gateway, ${ROUNDS} rounds)`,
      value: Math.round(peakRss / 1e6),
      unit: "MB",
    },
    {
      figure: "smtp: RSS growth of the bench process, first round to peak",
      value: Math.round((peakRss - mine[0]!.rssBefore) / 1e6),
      unit: "MB",
    },
  );
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const r of await bench())
    console.log(
      `${r.figure}: ${r.value.toFixed(1)} ${r.unit}${r.peer ? ` (peer ${r.peer.value.toFixed(1)} ${r.unit}, ${r.peer.label})` : ""}${r.note ? ` [${r.note}]` : ""}`,
    );
}
