// The notification relay is down: faxes still go out, their notifications wait in the store, and
// a SIGKILL + restart while they wait loses none. Once a relay listens on that port every
// notification arrives exactly once (by Message-ID and by job).
import { renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import nodemailer from "nodemailer";
import { afterAll, describe, expect, it } from "vitest";
import { notificationMessageId } from "../../src/notify/message-id.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";
import type { Notification } from "../../src/store/types.js";
import { waitUntil } from "../helpers/wait.js";
import { SmtpSink } from "../notify/smtp-sink.js";
import {
  emulatorFaxes,
  freePort,
  kill,
  makeRig,
  numberFor,
  SHORT,
  startDaemon,
  tally,
  type Daemon,
  type Rig,
} from "./harness.js";

const FROM = "faxgate@example.com";

async function pdf(text: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc
    .addPage([612, 792])
    .drawText(text, { x: 72, y: 700, size: 12, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
}

async function snapshot(rig: Rig): Promise<{ notifications: Notification[]; jobsFinal: boolean; jobs: number }> {
  const store = SqliteStore.open({ dataDir: rig.dataDir });
  try {
    const jobs = await store.listJobs({ limit: 100_000 });
    return {
      notifications: await store.listNotifications(),
      jobsFinal: jobs.every((j) => (FINAL_JOB_STATES as readonly string[]).includes(j.state)),
      jobs: jobs.length,
    };
  } finally {
    store.close();
  }
}

describe("notification relay down", () => {
  let rig: Rig | undefined;
  let daemon: Daemon | null = null;
  const sink = new SmtpSink();
  afterAll(async () => {
    if (daemon) await kill(daemon, "SIGKILL");
    await sink.stop();
    if (rig) {
      await rig.agent.close();
      await rig.emu.stop();
      rmSync(rig.dir, { recursive: true, force: true });
    }
  });

  it("faxes while the relay is down, keeps every notification across a SIGKILL, and delivers each exactly once when it is back", async () => {
    const relayPort = await freePort();
    rig = await makeRig({ delayMs: 100, config: { notify: { transport: `smtp://127.0.0.1:${relayPort}` } } });
    daemon = await startDaemon(rig);

    const n = SHORT ? 4 : 12;
    const attachment = await pdf("notify-down");
    const replies: string[] = [];
    for (let i = 0; i < n; i += 1) {
      const t = nodemailer.createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true });
      const info = await t.sendMail({
        from: "alice@example.com",
        to: `${numberFor(i).slice(1)}@fax.example.com`,
        subject: `notify-down ${i}`,
        text: "see attachment",
        attachments: [{ filename: "doc.pdf", content: attachment }],
      });
      replies.push(info.response);
    }
    expect(replies.every((r) => r.startsWith("250"))).toBe(true);
    // and a spool file nobody can address: a "rejected" notification without a job
    const tmp = path.join(rig.dir, "drop.tmp");
    writeFileSync(tmp, await pdf("no destination here"));
    renameSync(tmp, path.join(rig.spoolRoot, "alice", "no-destination.pdf"));

    // every fax done, every notification tried once and deferred (the relay refuses connections)
    const expectedNotifications = n + 1;
    const deferred = await waitUntil(
      async () => {
        const s = await snapshot(rig!);
        const waiting = s.notifications.filter((x) => x.state === "pending" && x.attempts >= 1 && x.lastError !== null);
        return s.jobs === n &&
          s.jobsFinal &&
          s.notifications.length === expectedNotifications &&
          waiting.length === expectedNotifications
          ? s
          : null;
      },
      "all jobs final and every notification deferred",
      60_000,
      250,
    );
    const faxed = tally(new Set(Array.from({ length: n }, (_, i) => numberFor(i))), await emulatorFaxes(rig));
    expect(faxed.lost).toEqual([]);

    // SIGKILL while they wait, restart, then the relay comes up on that port
    await kill(daemon, "SIGKILL");
    daemon = await startDaemon(rig);
    sink.port = relayPort;
    await sink.start();

    // the first retry is about 30 s after the first try (src/notify/retry-schedule.ts)
    await waitUntil(
      () => sink.messages.length >= expectedNotifications,
      "every notification at the relay",
      150_000,
      250,
    );
    // A notification is recorded as sent only after the relay accepted it (the sink has it by
    // then), and one recorded as sent is never sent again: once all are, no duplicate can still
    // be on its way, so there is nothing to sleep for.
    await waitUntil(
      async () => (await snapshot(rig!)).notifications.every((x) => x.state === "sent"),
      "every notification recorded as sent",
      30_000,
      250,
    );
    const after = await snapshot(rig);

    const byId = new Map<string, number>();
    const byJob = new Map<string, number>();
    for (const m of sink.messages) {
      const id = m.parsed.messageId ?? "(none)";
      byId.set(id, (byId.get(id) ?? 0) + 1);
      const job = m.parsed.headers.get("x-faxgate-job");
      if (typeof job === "string") byJob.set(job, (byJob.get(job) ?? 0) + 1);
    }
    const expectedIds = new Set(after.notifications.map((x) => notificationMessageId(x, FROM)));
    const jobIds = new Set(after.notifications.filter((x) => x.kind === "outcome").map((x) => x.jobId!));
    const duplicatedIds = [...byId.values()].filter((c) => c > 1).length;
    const missingIds = [...expectedIds].filter((id) => !byId.has(id));
    const strangers = [...byId.keys()].filter((id) => !expectedIds.has(id));
    process.stdout.write(
      `notify down: ${n} mails faxed ${faxed.faxed}/${n} while the relay was down, notifications ${deferred.notifications.length} deferred ` +
        `(attempts ${deferred.notifications.map((x) => x.attempts).join(",")}), SIGKILL + restart, relay up: ` +
        `${sink.messages.length} mails received, distinct Message-IDs ${byId.size}/${expectedIds.size}, missing ${missingIds.length}, ` +
        `duplicated ${duplicatedIds}, unknown ${strangers.length}; outcome mails per job ${[...jobIds].map((j) => byJob.get(j) ?? 0).join(",")}; ` +
        `store: ${after.notifications.filter((x) => x.state === "sent").length} sent\n`,
    );
    expect(missingIds).toEqual([]);
    expect(duplicatedIds).toBe(0);
    expect(strangers).toEqual([]);
    expect(sink.messages.length).toBe(expectedNotifications);
    expect(jobIds.size).toBe(n);
    for (const j of jobIds) expect(byJob.get(j), j).toBe(1);
    expect(sink.messages.every((m) => m.envelope.to.includes("alice@example.com"))).toBe(true);
    expect(daemon.child.exitCode).toBeNull();
  });
});
