// The fleet rows (issue 55): 1, 2 and 3 gateways (`faxgate start`, each its own process, from
// source through the fault suite's rig) on one private PostgreSQL, against one emulator that limits
// the account to FAXGATE_BENCH_FLEET_LIMIT calls a second (the gateways set 80% of it). A burst of
// FAXGATE_BENCH_FLEET_MAILS mails is spread over the gateways by 8 senders; measured: the accept
// rate (first mail sent to last 250) and the submit rate (faxes the service took, first to last),
// each as a ratio to one gateway, and the 429s the account met (the largest steady submit rate
// held without one is the 3-gateway submit rate when that count is 0). Run small by default; the
// lead runs it full on a quiet machine (docs/bench.md).
import path from "node:path";
import nodemailer from "nodemailer";
import { request } from "undici";
import { pgAvailable, startPgCluster } from "../test/helpers/pg-cluster.js";
import {
  type Daemon,
  disposeRig,
  emulatorFaxes,
  kill,
  makeRig,
  numberFor,
  type Rig,
  secondRig,
  startDaemon,
} from "../test/faults/harness.js";
import type { BenchResult } from "./types.js";

const MAILS = Number(process.env.FAXGATE_BENCH_FLEET_MAILS ?? 60);
const LIMIT = Number(process.env.FAXGATE_BENCH_FLEET_LIMIT ?? 20);
const SENDERS = 8;

async function admin(rig: Rig, method: "GET" | "PUT", p: string, body?: unknown): Promise<unknown> {
  const res = await request(`${rig.emu.baseUrl}${p}`, {
    method,
    dispatcher: rig.agent,
    headers: { authorization: `Basic ${rig.emu.adminKey}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return res.body.json();
}

async function send(port: number, i: number): Promise<boolean> {
  const t = nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true });
  try {
    const info = await t.sendMail({
      from: "alice@example.com",
      to: `${numberFor(i).slice(1)}@fax.example.com`,
      subject: `fleet bench ${i}`,
      messageId: `<fleet-bench-${i}@bench.test>`,
      text: "a one-page fax",
    });
    return /^250 /.test(info.response);
  } catch {
    return false;
  } finally {
    t.close();
  }
}

interface Round {
  acceptPerSecond: number;
  submitPerSecond: number;
  refused: number;
}

async function round(url: string, gateways: number): Promise<Round> {
  const rig = await makeRig({
    delayMs: 200,
    config: {
      database: url,
      api: { ratePerSecond: Math.floor(LIMIT * 0.8), concurrency: 8, historyPerMinute: 8 },
      queue: { pollInterval: "2s" },
    },
  });
  const daemons: Daemon[] = [];
  try {
    await admin(rig, "PUT", "/_emulator/behaviour", { ratePerSecond: LIMIT, historyPerMinute: 8 });
    const rigs = [rig];
    for (let i = 1; i < gateways; i++) rigs.push(await secondRig(rig, `gw${i + 1}`));
    daemons.push(...(await Promise.all(rigs.map((r) => startDaemon(r)))));
    const t0 = Date.now();
    let next = 0;
    let accepted = 0;
    await Promise.all(
      Array.from({ length: SENDERS }, async (_, w) => {
        for (let i = next++; i < MAILS; i = next++)
          if (await send(rigs[(i + w) % rigs.length]!.smtpPort, i)) accepted += 1;
      }),
    );
    const acceptMs = Date.now() - t0;
    for (;;) {
      const faxes = (await emulatorFaxes(rig)) as Array<{ faxNumber: string; createdAt?: string }>;
      if (faxes.length >= accepted) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const faxes = (await emulatorFaxes(rig)) as unknown as Array<{ createdAt: string }>;
    const last = Math.max(...faxes.map((f) => Date.parse(f.createdAt)));
    const load = Object.values(
      (await admin(rig, "GET", "/_emulator/limits")) as Record<string, { refusedRate: number }>,
    );
    return {
      acceptPerSecond: (accepted * 1000) / acceptMs,
      submitPerSecond: (faxes.length * 1000) / Math.max(1, last - t0),
      refused: load.reduce((s, l) => s + l.refusedRate, 0),
    };
  } finally {
    for (const d of daemons.slice(1)) await kill(d, "SIGTERM");
    await disposeRig(rig, daemons[0]);
  }
}

export default async function fleetBench(): Promise<BenchResult[]> {
  const why = pgAvailable();
  if (why) throw new Error(`fleet bench needs PostgreSQL: ${why}`);
  // gateways sharing a PostgreSQL queue refuse to start without the ledger's number key
  process.env.FAXGATE_LEDGER_KEY ??= "bench-ledger-key-0123456789abcdef0123456789abcdef";
  const cluster = await startPgCluster();
  try {
    const rounds: Round[] = [];
    for (const n of [1, 2, 3]) {
      rounds.push(await round(await cluster.createDatabase(), n));
      process.stderr.write(`fleet: ${n} gateway(s): ${JSON.stringify(rounds[n - 1])}\n`);
    }
    const one = rounds[0]!;
    const rows: BenchResult[] = [];
    rounds.forEach((r, i) => {
      rows.push({
        figure: `fleet accept rate, ${i + 1} gateway(s), ${MAILS} mails`,
        value: r.acceptPerSecond,
        unit: "mails/s",
        peer: { label: "1 gateway", value: one.acceptPerSecond },
      });
      rows.push({
        figure: `fleet submit rate, ${i + 1} gateway(s), account limit ${LIMIT}/s`,
        value: r.submitPerSecond,
        unit: "faxes/s",
        peer: { label: "1 gateway", value: one.submitPerSecond },
        note: `${i + 1} gateway(s): ${r.refused} calls refused with 429 for the account's rate`,
      });
    });
    const three = rounds[2]!;
    rows.push({
      figure: "fleet: largest steady submit rate without a 429 (3 gateways)",
      value: three.refused === 0 ? three.submitPerSecond : 0,
      unit: "faxes/s",
      peer: { label: "account limit, calls/s", value: LIMIT },
    });
    return rows;
  } finally {
    cluster.destroy();
  }
}

if (import.meta.url === `file://${path.resolve(process.argv[1] ?? "")}`) {
  for (const r of await fleetBench()) process.stdout.write(`${r.figure}: ${r.value.toFixed(2)} ${r.unit}\n`);
}
