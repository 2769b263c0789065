// A fleet of three gateways (three `faxgate start` processes) on one PostgreSQL, against the
// emulator set to the fax account's limits: calls per second, and history calls per minute. Mail
// comes at a steady rate to whichever gateways run, while one gateway is SIGKILLed and started
// again twice. Then, from the service's side (the emulator's own counts and records): every
// accepted recipient faxed once, none parked, no call refused for the account's rate and no
// history 429 beyond the first, faxes in progress followed no more than one gateway would follow
// them, and every cover page the users' preferences ask for (bob: on, alice: off).
// Skips where PostgreSQL is not installed.
import path from "node:path";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import nodemailer from "nodemailer";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";
import { pgAvailable, startPgCluster, type PgCluster } from "../helpers/pg-cluster.js";
import { waitUntil } from "../helpers/wait.js";
import {
  type Daemon,
  disposeRig,
  emulatorFaxes,
  kill,
  makeRig,
  numberFor,
  type Rig,
  SHORT,
  secondRig,
  startDaemon,
  tally,
} from "./harness.js";

const pgMissing = pgAvailable();
if (pgMissing) console.warn(`fleet fault test skipped: ${pgMissing}`);

/** The account's limits at the service, and the gateways' setting a little under the rate. */
const ACCOUNT_RATE = 10;
const ACCOUNT_HISTORY = 8;
const GATEWAY_RATE = 8;
/** The service takes this long to finish a fax; the gateways poll every POLL_MS. */
const PROCESSING_MS = 1500;
const POLL_MS = 2000;
const LOAD_MS = SHORT ? 60_000 : 180_000;
const MAILS_PER_SECOND = SHORT ? 1.5 : 2;

let cluster: PgCluster;
beforeAll(async () => {
  if (!pgMissing) cluster = await startPgCluster();
}, 120_000);
afterAll(() => cluster?.destroy());

interface Mail {
  id: number;
  user: "alice" | "bob";
  number: string;
  accepted: boolean;
}

async function pdf(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc
    .addPage([612, 792])
    .drawText("fleet", { x: 72, y: 700, size: 12, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
}

async function send(port: number, m: Mail, attachment: Buffer): Promise<void> {
  const t = nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    secure: false,
    ignoreTLS: true,
    connectionTimeout: 2000,
    greetingTimeout: 2000,
    socketTimeout: 15_000,
  });
  try {
    const info = await t.sendMail({
      from: `${m.user}@example.com`,
      to: `${m.number.slice(1)}@fax.example.com`,
      subject: `fleet ${m.id}`,
      messageId: `<fleet-${m.id}@faults.test>`,
      text: "see attachment",
      attachments: [{ filename: "doc.pdf", content: attachment }],
    });
    if (/^250 /.test(info.response)) m.accepted = true;
  } catch {
    // refused (a gateway killed mid-session, 451): a relay tries again, as the drain does
  } finally {
    t.close();
  }
}

async function admin<T>(rig: Rig, p: string): Promise<T> {
  const res = await request(`${rig.emu.baseUrl}${p}`, {
    dispatcher: rig.agent,
    headers: { authorization: `Basic ${rig.emu.adminKey}`, "content-type": "application/json" },
  });
  return (await res.body.json()) as T;
}

async function setBehaviour(rig: Rig, body: Record<string, unknown>): Promise<void> {
  const res = await request(`${rig.emu.baseUrl}/_emulator/behaviour`, {
    method: "PUT",
    dispatcher: rig.agent,
    headers: { authorization: `Basic ${rig.emu.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.body.dump();
  if (res.statusCode >= 300) throw new Error(`behaviour: HTTP ${res.statusCode}`);
}

describe.skipIf(pgMissing !== null)("a fleet of three gateways on one PostgreSQL, at the account's limits", () => {
  let rig: Rig;
  const daemons: Array<Daemon | null> = [null, null, null];

  afterAll(async () => {
    for (const d of daemons.slice(1)) if (d) await kill(d, "SIGTERM");
    await disposeRig(rig, daemons[0]);
  });

  it(`${MAILS_PER_SECOND} mails a second for ${LOAD_MS / 1000} s, one gateway killed twice: one account's worth of calls, nothing lost or doubled`, async () => {
    const url = await cluster.createDatabase();
    rig = await makeRig({
      delayMs: PROCESSING_MS,
      config: {
        database: url,
        api: { ratePerSecond: GATEWAY_RATE, concurrency: 4, historyPerMinute: ACCOUNT_HISTORY },
        queue: { lease: "3s", reconcileGrace: "8s", pollInterval: `${POLL_MS}ms` },
      },
    });
    await setBehaviour(rig, { ratePerSecond: ACCOUNT_RATE, historyPerMinute: ACCOUNT_HISTORY });
    const rigs = [rig, await secondRig(rig, "gw2"), await secondRig(rig, "gw3")];
    // one at a time: three starting at once on a busy machine can take past the start timeout
    for (let i = 0; i < 3; i++) daemons[i] = await startDaemon(rigs[i]!);
    const attachment = await pdf();

    const mails: Mail[] = [];
    const sending: Array<Promise<void>> = [];
    const t0 = Date.now();
    // two kills of the same gateway: the first early, the second once it has been back a while
    // (a start takes seconds on a busy machine); the load goes on until both are done
    const victim = 2;
    let kills = 0;
    let backAt = 0;
    let restarting: Promise<void> = Promise.resolve();
    for (let i = 0; Date.now() - t0 < LOAD_MS || kills < 2 || !daemons[victim]; i++) {
      const due = t0 + (i * 1000) / MAILS_PER_SECOND;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const killNow =
        kills === 0 ? Date.now() - t0 >= LOAD_MS / 6 : kills === 1 && backAt > 0 && Date.now() - backAt >= 5000;
      if (killNow && daemons[victim]) {
        kills += 1;
        backAt = 0;
        await kill(daemons[victim]!);
        daemons[victim] = null;
        // the dead one's port refuses meanwhile; its claims run out and go to the others
        restarting = new Promise((r) => setTimeout(r, 3000)).then(async () => {
          const at = Date.now();
          daemons[victim] = await startDaemon(rigs[victim]!);
          backAt = Date.now();
          process.stdout.write(`fleet: gateway ${victim + 1} started again in ${backAt - at} ms\n`);
        });
      }
      const up = daemons.map((d, k) => (d ? k : -1)).filter((k) => k >= 0);
      const m: Mail = { id: i, user: i % 2 === 0 ? "bob" : "alice", number: numberFor(i), accepted: false };
      mails.push(m);
      sending.push(send(rigs[up[i % up.length]!]!.smtpPort, m, attachment));
    }
    await Promise.all(sending);
    await restarting;
    process.stdout.write(`fleet: load over after ${Date.now() - t0} ms\n`);
    for (let round = 0; round < 3; round++)
      for (const m of mails.filter((x) => !x.accepted)) await send(rig.smtpPort, m, attachment);

    const checker = await PgStore.open({ url, dataDir: path.join(rig.dir, "checker") });
    try {
      await waitUntil(
        async () =>
          (await checker.listJobs({ limit: 100_000 })).every((j) =>
            (FINAL_JOB_STATES as readonly string[]).includes(j.state),
          ),
        "every job final",
        SHORT ? 90_000 : 300_000,
        500,
      );
      const jobs = await checker.listJobs({ limit: 100_000 });
      const notDelivered = jobs.flatMap((j) => j.recipients.filter((r) => r.state !== "delivered"));
      const faxes = (await emulatorFaxes(rig)) as Array<{ faxNumber: string; coverPage?: boolean }>;
      const accepted = mails.filter((m) => m.accepted);
      const t = tally(new Set(accepted.map((m) => m.number)), faxes as never);
      const limits = Object.values(
        await admin<
          Record<string, { calls: number; peakPerSecond: number; refusedRate: number; refusedHistory: number }>
        >(rig, "/_emulator/limits"),
      );
      const requests = await admin<Record<string, number>>(rig, "/_emulator/requests");
      const tracking = (requests["GET /v1/fax/:id/info"] ?? 0) + (requests["GET /v1/fax/history"] ?? 0);
      const byNumber = new Map(mails.map((m) => [m.number, m]));
      const wrongCover = faxes.filter((f) => (byNumber.get(f.faxNumber)?.user === "bob") !== (f.coverPage === true));
      process.stdout.write(
        `fleet: mails ${mails.length} (${accepted.length} got 250), faxed ${t.faxed}, lost ${t.lost.length}, duplicated ${t.duplicated.length}, not delivered ${notDelivered.length}; service: ${JSON.stringify(limits)}; tracking calls ${tracking} (${(tracking / Math.max(1, faxes.length)).toFixed(2)} a fax); wrong cover ${wrongCover.length}\n`,
      );
      expect(mails.filter((m) => !m.accepted).map((m) => m.id)).toEqual([]);
      expect(t.lost).toEqual([]);
      expect(t.duplicated).toEqual([]);
      // nothing parked as "cannot tell", nothing failed: every recipient delivered
      expect(notDelivered.map((r) => `${r.jobId}/${r.idx} ${r.state} ${r.lastError ?? ""}`)).toEqual([]);
      expect(limits).toHaveLength(1);
      const load = limits[0]!;
      // not one call over the account's rate, and at most the first history 429
      expect(load.refusedRate).toBe(0);
      expect(load.peakPerSecond).toBeLessThanOrEqual(ACCOUNT_RATE);
      expect(load.refusedHistory).toBeLessThanOrEqual(1);
      // one gateway polls a fax about once per poll while the service works on it (PROCESSING_MS
      // under POLL_MS: once or twice); three that each followed every fax would make three times that
      expect(tracking / faxes.length).toBeLessThanOrEqual(2.5);
      expect(wrongCover).toEqual([]);
    } finally {
      await checker.close();
    }
  }, 600_000);
});
