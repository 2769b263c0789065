// The fax service in trouble while the gateway is under load: a full outage (the emulator
// stopped, then started again on the same port and data), then dropped and slow answers, 429
// storms and 5xx bursts. Everything queued is delivered exactly once; nothing fails for a reason
// that was only the service's trouble.
import { rmSync } from "node:fs";
import { URL } from "node:url";
import { PDFDocument } from "@cantoo/pdf-lib";
import nodemailer from "nodemailer";
import { afterAll, describe, expect, it } from "vitest";
import { startEmulator, type RunningEmulator } from "../../src/emulator/emulator.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";
import { waitUntil } from "../helpers/wait.js";
import { TEST_SEED } from "../helpers/emulator.js";
import {
  emulatorFaxes,
  kill,
  makeRig,
  numberFor,
  setFaults,
  SHORT,
  startDaemon,
  tally,
  type Daemon,
  type Rig,
} from "./harness.js";

const PER_PHASE = SHORT ? 15 : 60;

describe("service trouble under load", () => {
  let rig: Rig;
  let daemon: Daemon | null = null;
  let restarted: RunningEmulator | null = null;
  afterAll(async () => {
    if (daemon) await kill(daemon, "SIGTERM");
    await restarted?.close();
    await rig?.agent.close();
    await rig?.emu.stop();
    if (rig) rmSync(rig.dir, { recursive: true, force: true });
  });

  it("delivers everything exactly once through an outage, drops, slowness, 429s and 5xx", async () => {
    rig = await makeRig({ delayMs: 150 });
    daemon = await startDaemon(rig);
    const doc = await PDFDocument.create();
    doc.addPage();
    const pdf = Buffer.from(await doc.save());
    let seq = 0;
    const accepted = new Set<string>();
    const sendBatch = async (count: number) => {
      const t = nodemailer.createTransport({
        host: "127.0.0.1",
        port: rig.smtpPort,
        secure: false,
        ignoreTLS: true,
        pool: true,
        maxConnections: 4,
      });
      await Promise.all(
        Array.from({ length: count }, async () => {
          const n = numberFor(seq++);
          const info = await t.sendMail({
            from: "bob@example.com",
            to: `${n.slice(1)}@fax.example.com`,
            subject: "trouble",
            attachments: [{ filename: "a.pdf", content: pdf }],
          });
          expect(info.response).toMatch(/^250 /);
          accepted.add(n);
        }),
      );
      t.close();
    };

    // 1. outage: the service is gone while mail keeps arriving
    await sendBatch(PER_PHASE);
    const port = Number(new URL(rig.emu.baseUrl).port);
    await rig.emu.close();
    await sendBatch(PER_PHASE);
    // fixed wait on purpose: the outage's length is the scenario
    await new Promise((r) => setTimeout(r, SHORT ? 3000 : 10_000));
    restarted = await startEmulator({ dataDir: rig.emu.dataDir, port, seed: TEST_SEED, delayMs: 150 });

    // 2. a bad service: drops after creating the fax, slowness, rate limits and 5xx
    await setFaults(rig, { dropRate: 0.2, latencyMs: 300, rateLimitRate: 0.2, errorRate: 0.1 });
    await sendBatch(PER_PHASE);
    // fixed wait on purpose: the bad phase's length is the scenario
    await new Promise((r) => setTimeout(r, 3000));
    await setFaults(rig, { dropRate: 0, latencyMs: 0, rateLimitRate: 0, errorRate: 0 });

    const jobs = await waitUntil(
      async () => {
        const store = SqliteStore.open({ dataDir: rig.dataDir });
        try {
          const all = await store.listJobs({ limit: 100_000 });
          return all.every((j) => (FINAL_JOB_STATES as readonly string[]).includes(j.state)) ? all : null;
        } finally {
          store.close();
        }
      },
      "every job final",
      240_000,
      500,
    );
    const faxes = await emulatorFaxes(rig);
    const t = tally(accepted, faxes);
    const failed = jobs.filter((j) => j.state !== "delivered");
    const log = daemon.out.text;
    const count = (verb: string) => log.split(`"msg":"${verb}`).length - 1;
    process.stdout.write(
      `service trouble: deferred ${count("DEFERRED")}, unknown outcomes ${count("UNKNOWN")}, adopted ${count("RECONCILED fax found")}, ` +
        `accepted ${t.accepted}, faxed ${t.faxed}, lost ${t.lost.length}, duplicated ${t.duplicated.length}, ` +
        `jobs not delivered ${failed.length}${failed.length ? ` (${failed.map((j) => j.recipients[0]?.lastError).join("; ")})` : ""}\n`,
    );
    // the trouble really happened: sends were deferred through the outage
    expect(count("DEFERRED")).toBeGreaterThan(0);
    expect(t.lost).toEqual([]);
    expect(t.duplicated).toEqual([]);
    expect(failed).toEqual([]);
  });
});
