// A fleet of three gateways (three `faxgate start` processes) on one PostgreSQL, against the
// emulator set to the fax account's limits: calls per second, and history calls per minute.
// First a burst: a backlog is held (the service answers 503 to every call while it is mailed in)
// and then released to the three dispatchers at once, which alone would go at three times their
// own gate's rate, past the account's; the shared budget must keep the sum under it with no 429.
// Then mail comes at a steady rate to whichever gateways run, while one gateway is SIGKILLed and
// started again twice, with faxes that stay in progress for several polls, so that gateways that
// each followed every fax would make about three times the status calls of one. Then, from the
// service's side (the emulator's own counts and records): every accepted recipient faxed once,
// none parked, no call refused for the account's rate and no history 429 beyond the first, faxes
// in progress followed no more than one gateway would follow them, and every cover page the
// users' preferences ask for (bob: on, alice: off).
// Skips where PostgreSQL is not installed.
import path from "node:path";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import nodemailer from "nodemailer";
import { afterAll, describe, expect, it } from "vitest";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";
import { waitUntil } from "../helpers/wait.js";
import { type Fleet, startFleet } from "./fleet-rig.js";
import { usePgCluster } from "../helpers/store-backends.js";
import {
  emulatorAdmin,
  emulatorFaxes,
  kill,
  numberFor,
  type Rig,
  SHORT,
  setFaults,
  startDaemon,
  tally,
} from "./harness.js";

const postgres = usePgCluster("fleet fault test");
const pgMissing = postgres.missing;

/**
 * The fleet's rate (every gateway's api.ratePerSecond), and the account's limit at the service: the
 * rate plus the burst docs/ha.md allows for (arrivals bunched by a starved process's timers and the
 * network: up to 3 a second, once 4, measured on 2 loaded cores). Low enough that the three gateways,
 * each going at its own gate's rate, would reach three times it (12/s): only the shared budget holds it.
 */
const GATEWAY_RATE = 4;
const ACCOUNT_RATE = GATEWAY_RATE + 4;
const ACCOUNT_HISTORY = 8;
/**
 * Calls out at once, shared among the three (4 each). With 4 in all (1-2 each) the fleet could not
 * pass about 10 calls a second at the emulator's answer times even with no budget, so the rate check
 * could not fail: concurrency, not the budget, held it (issue 55).
 */
const CONCURRENCY = 12;
/**
 * The service takes this long to finish a fax; the gateways poll every POLL_MS. Several polls a
 * fax (not one or two) so that following by every gateway shows as about three times the calls.
 */
const PROCESSING_MS = 3000;
const POLL_MS = 1000;
/**
 * Status calls a fax one gateway may make: at most one a poll while the service works and the
 * last one (measured 2.3-2.7, fewer where a history page covers several faxes); three gateways
 * that each followed every fax made 5.2.
 */
const TRACKING_PER_FAX = PROCESSING_MS / POLL_MS + 0.5;
const LOAD_MS = SHORT ? 60_000 : 180_000;
/** Few enough that a user has at most FAX_INFO_MAX (3) faxes in progress most of the time: followed one by one. */
const MAILS_PER_SECOND = SHORT ? 1 : 1.2;
/** The held backlog: several seconds of the fleet's rate, so three gates at 4/s each would pass it. */
const BURST = SHORT ? 40 : 80;

interface Mail {
  id: number;
  user: "alice" | "bob";
  number: string;
  accepted: boolean;
  /** The gateway's last answer (or the client's error), for the failure message. */
  reply?: string;
}

async function pdf(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc
    .addPage([612, 792])
    .drawText("fleet", { x: 72, y: 700, size: 12, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
}

/** A reply as test output may show it: no fax number in clear. */
function masked(reply: string): string {
  return reply.replace(/\+?\d{6,}/g, "<number>");
}

async function send(port: number, m: Mail, attachment: Buffer): Promise<void> {
  const t = nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    secure: false,
    ignoreTLS: true,
    // a loaded CI machine (three fault files at once on 2 cores) can take seconds to greet
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
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
    m.reply = masked(info.response);
    if (/^250 /.test(info.response)) m.accepted = true;
  } catch (err) {
    m.reply = masked((err as { response?: string }).response ?? String(err));
    // refused (a gateway killed mid-session, 451): a relay tries again, as the drain does
  } finally {
    t.close();
  }
}

const admin = emulatorAdmin;

type Load = { calls: number; peakPerSecond: number; refusedRate: number; refusedHistory: number };

/** The account's load at the service since the last reset (one account: the users share it). */
async function accountLoad(rig: Rig): Promise<Load[]> {
  return Object.values(await admin<Record<string, Load>>(rig, "/_emulator/limits"));
}

/** API calls answered so far by the service, by route (refused ones included). */
async function calls(rig: Rig): Promise<{ sends: number; tracking: number }> {
  const r = await admin<Record<string, number>>(rig, "/_emulator/requests");
  return {
    sends: (r["POST /v1/faxes"] ?? 0) + (r["POST /v1/faxes/multiple"] ?? 0),
    tracking: (r["GET /v1/fax/:id/info"] ?? 0) + (r["GET /v1/fax/history"] ?? 0),
  };
}

describe.skipIf(pgMissing !== null)("a fleet of three gateways on one PostgreSQL, at the account's limits", () => {
  let fleet: Fleet | undefined;

  afterAll(() => fleet?.dispose());

  it(`${MAILS_PER_SECOND} mails a second for ${LOAD_MS / 1000} s, one gateway killed twice: one account's worth of calls, nothing lost or doubled`, async () => {
    const url = await postgres.database();
    fleet = await startFleet(url, {
      delayMs: PROCESSING_MS,
      config: {
        api: { ratePerSecond: GATEWAY_RATE, concurrency: CONCURRENCY, historyPerMinute: ACCOUNT_HISTORY },
        queue: { lease: "3s", reconcileGrace: "8s", pollInterval: `${POLL_MS}ms` },
      },
      account: { ratePerSecond: ACCOUNT_RATE, historyPerMinute: ACCOUNT_HISTORY },
    });
    const { rig, rigs, daemons } = fleet;
    const attachment = await pdf();
    const checker = await PgStore.open({ url, dataDir: path.join(rig.dir, "checker") });
    const allFinal = async () =>
      (await checker.listJobs({ limit: 100_000 })).every((j) =>
        (FINAL_JOB_STATES as readonly string[]).includes(j.state),
      );
    try {
      // each gateway reads each user's cover page preference once (it keeps it for
      // notify.preferenceRefresh), so that mail is still taken while the service refuses
      const warm: Mail[] = [0, 1, 2, 3, 4, 5].map((k) => ({
        id: 20_000 + k,
        user: k % 2 === 0 ? "bob" : "alice",
        number: numberFor(20_000 + k),
        accepted: false,
      }));
      await Promise.all(warm.map((m, k) => send(rigs[Math.floor(k / 2)]!.smtpPort, m, attachment)));
      expect(warm.filter((m) => !m.accepted).map((m) => `${m.id}: ${m.reply}`)).toEqual([]);
      await waitUntil(allFinal, "every job of the warm-up final", 60_000, 500);

      // the burst: mail taken while the service refuses every call (503, which no budget
      // counts), each fax tried once and deferred, so the backlog is due at all three at once
      await setFaults(rig, { errorRate: 1 });
      const sendsBefore = (await calls(rig)).sends;
      const burst: Mail[] = Array.from({ length: BURST }, (_, k) => ({
        id: 10_000 + k,
        user: k % 2 === 0 ? "bob" : "alice",
        number: numberFor(10_000 + k),
        accepted: false,
      }));
      await Promise.all(burst.map((m, k) => send(rigs[k % 3]!.smtpPort, m, attachment)));
      expect(burst.filter((m) => !m.accepted).map((m) => `${m.id}: ${m.reply}`)).toEqual([]);
      await waitUntil(
        async () => (await calls(rig)).sends - sendsBefore >= BURST,
        "every fax of the burst tried once and refused",
        60_000,
        200,
      );
      await admin(rig, "/_emulator/limits", "DELETE");
      const released = Date.now();
      await setFaults(rig, { errorRate: 0 });
      await waitUntil(allFinal, "every job of the burst final", 90_000, 500);
      const burstLoad = await accountLoad(rig);
      process.stdout.write(
        `fleet: burst of ${BURST} done in ${Date.now() - released} ms; service: ${JSON.stringify(burstLoad)}\n`,
      );
      expect(burstLoad).toHaveLength(1);
      // the account's calls in any one second at the service (rolling, refused ones included):
      // alone, each gateway would go at its own 4/s, three of them past the account's 8/s
      // (seen failing with slot() resolving at once: peak 10-12, 4-16 refused; with each gateway
      // on a budget row of its own: peak 11-14, 8-24 refused)
      expect(burstLoad[0]!.refusedRate).toBe(0);
      expect(burstLoad[0]!.peakPerSecond).toBeLessThanOrEqual(ACCOUNT_RATE);
      expect(burstLoad[0]!.calls).toBeGreaterThanOrEqual(BURST);
      await admin(rig, "/_emulator/limits", "DELETE");
      await steady([...warm, ...burst]);
    } finally {
      await checker.close();
    }

    async function steady(earlier: Mail[]): Promise<void> {
      const trackingBefore = (await calls(rig)).tracking;
      const faxedBefore = (await emulatorFaxes(rig)).length;
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

      await waitUntil(allFinal, "every job final", SHORT ? 90_000 : 300_000, 500);
      const jobs = await checker.listJobs({ limit: 100_000 });
      const notDelivered = jobs.flatMap((j) => j.recipients.filter((r) => r.state !== "delivered"));
      const faxes = (await emulatorFaxes(rig)) as Array<{ faxNumber: string; coverPage?: boolean }>;
      const accepted = [...earlier, ...mails].filter((m) => m.accepted);
      const t = tally(new Set(accepted.map((m) => m.number)), faxes as never);
      const limits = await accountLoad(rig);
      // the steady part's faxes only: the burst's were final before it began
      const tracking = (await calls(rig)).tracking - trackingBefore;
      const steadyFaxes = faxes.length - faxedBefore;
      const byNumber = new Map([...earlier, ...mails].map((m) => [m.number, m]));
      const wrongCover = faxes.filter((f) => (byNumber.get(f.faxNumber)?.user === "bob") !== (f.coverPage === true));
      process.stdout.write(
        `fleet: mails ${earlier.length} before and ${mails.length} steady (${accepted.length} got 250), faxed ${t.faxed}, lost ${t.lost.length}, duplicated ${t.duplicated.length}, not delivered ${notDelivered.length}; service: ${JSON.stringify(limits)}; tracking calls ${tracking} for ${steadyFaxes} faxes (${(tracking / Math.max(1, steadyFaxes)).toFixed(2)} a fax, bound ${TRACKING_PER_FAX}); wrong cover ${wrongCover.length}\n`,
      );
      expect(mails.filter((m) => !m.accepted).map((m) => m.id)).toEqual([]);
      expect(t.lost).toEqual([]);
      expect(t.duplicated).toEqual([]);
      // nothing parked as "cannot tell", nothing failed: every recipient delivered
      expect(notDelivered.map((r) => `${r.jobId}/${r.idx} ${r.state} ${r.lastError ?? ""}`)).toEqual([]);
      // one gateway polls a fax once per poll while the service works on it, then once more; three
      // that each followed every fax would make about twice that or more (checked before the
      // rate, which the extra calls can also break, so a failure names the tracking)
      expect(steadyFaxes).toBeGreaterThan(0);
      expect(tracking / steadyFaxes).toBeLessThanOrEqual(TRACKING_PER_FAX);
      expect(limits).toHaveLength(1);
      const load = limits[0]!;
      // not one call over the account's rate, and at most the first history 429
      expect(load.refusedRate).toBe(0);
      expect(load.peakPerSecond).toBeLessThanOrEqual(ACCOUNT_RATE);
      expect(load.refusedHistory).toBeLessThanOrEqual(1);
      expect(wrongCover).toEqual([]);
    }
  }, 600_000);
});
