// A purge cut in two by a crash (issue 56): the daemon is SIGKILLed after the fax service deleted
// its copy of a sent fax (DELETE /v1/fax/{id} done) and before the gateway wrote that down (the
// `purged` ledger row and the purge's `done`, one transaction). After a restart the purge is
// finished by the first pass, not when the dead run's claim runs out: the delete is made again,
// answered 404, read back as gone, and the ledger holds exactly one `purged` row for that copy
// while the chain still verifies. The job itself is left as it was (delivered, no error).
//
// The crash point: every API call the emulator answers is held back 3 s (latencyMs), so the
// gateway's read-back after the delete waits at the service while the test sees the fax gone
// from the emulator's own list and kills the daemon then.
//
// On SQLite and on a private PostgreSQL. There the killed run's claim is not taken back at start
// (another live gateway may hold claims) but when the restarted gateway takes the purge duty,
// which the dead one's session lost with it: the test fails on the 5-minute lease otherwise.
import { rmSync } from "node:fs";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import nodemailer from "nodemailer";
import { afterAll, describe, expect, it } from "vitest";
import { SqlLedger } from "../../src/ledger/ledger.js";
import type { LedgerRow } from "../../src/ledger/events.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { listServicePurges, type ServicePurgeRow } from "../../src/store/sql/retention.js";
import { runCli, spawnCli } from "../helpers/cli.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { OutputWatch, waitUntil } from "../helpers/wait.js";
import { type Daemon, emulatorFaxes, kill, makeRig, numberFor, type Rig, setFaults, startDaemon } from "./harness.js";
import { usePgCluster } from "../helpers/store-backends.js";

const HOLD_BACK_MS = 3000;

interface Seen {
  jobState: string | undefined;
  purges: ServicePurgeRow[];
  purgedRows: LedgerRow[];
}

/** The queue as a second process sees it (its ledger read seals PostgreSQL's pending rows first). */
async function seen(rig: Rig, url: string | null, jobId: string): Promise<Seen> {
  const store: QueueStore = url
    ? await PgStore.open({ url, dataDir: `${rig.dir}/checker` })
    : SqliteStore.open({ dataDir: rig.dataDir });
  try {
    const job = await store.getJob(jobId);
    return {
      jobState: job?.state,
      purges: await listServicePurges(store.retentionPort().db),
      purgedRows: await new SqlLedger(store.sql, null).rows({ action: "purged", object: { kind: "job", id: jobId } }),
    };
  } finally {
    await store.close();
  }
}

const postgres = usePgCluster("the PostgreSQL half");

async function pdf(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage([612, 792]).drawText("purge fault", { x: 72, y: 700, size: 12, font });
  return Buffer.from(await doc.save());
}

describe.each(postgres.missing ? ["sqlite"] : ["sqlite", "postgres"])(
  "a purge at the service and its ledger row, a SIGKILL between them, on %s",
  (backend) => {
    let url: string | null = null;
    let rig: Rig | undefined;
    let daemon: Daemon | null = null;
    let child: ReturnType<typeof spawnCli> | null = null;
    afterAll(async () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      if (daemon) await kill(daemon, "SIGKILL");
      if (rig) {
        await rig.agent.close();
        await rig.emu.stop();
        rmSync(rig.dir, { recursive: true, force: true });
      }
    });

    it("finishes the purge after a restart: one purged row, the chain whole, the job untouched", async () => {
      // the service's copy goes 1 s after the fax finished; the local copy stays (sent: 30d)
      if (backend === "postgres") url = await postgres.database();
      rig = await makeRig({
        delayMs: 100,
        config: {
          api: { adminKey: TEST_KEYS.admin },
          retention: { service: "1s" },
          ...(url ? { database: url } : {}),
        },
      });
      daemon = await startDaemon(rig);
      const number = numberFor(7);
      const mail = nodemailer.createTransport({
        host: "127.0.0.1",
        port: rig.smtpPort,
        secure: false,
        ignoreTLS: true,
      });
      const info = await mail.sendMail({
        from: "alice@example.com",
        to: `${number.slice(1)}@fax.example.com`,
        subject: "purge fault",
        text: "see attachment",
        attachments: [{ filename: "doc.pdf", content: await pdf() }],
      });
      const jobId = /queued as (\S+)/.exec(info.response)?.[1];
      expect(jobId, info.response).toBeTruthy();
      await waitUntil(
        async () => (await seen(rig!, url, jobId!)).jobState === "delivered",
        "the fax delivered",
        60_000,
        200,
      );
      const messageId = (await emulatorFaxes(rig)).find((f) => f.faxNumber === number)?.messageId;
      expect(messageId).toBeTruthy();
      await kill(daemon, "SIGTERM");
      daemon = null;

      // restart with every API answer held back; the first pass claims the copy and deletes it
      await setFaults(rig, { latencyMs: HOLD_BACK_MS });
      child = spawnCli(["start", "--config", rig.configFile], { cwd: rig.dir });
      const out = new OutputWatch(child.stdout!);
      rig.outputs.push(out);
      await waitUntil(
        async () => !(await emulatorFaxes(rig!)).some((f) => f.messageId === messageId),
        "the service copy deleted at the emulator",
        60_000,
        20,
      ).catch((err) => {
        throw new Error(`${(err as Error).message}; the daemon said:\n${out.text.slice(-3000)}`);
      });
      await new Promise<void>((resolve) => {
        child!.once("exit", () => resolve());
        child!.kill("SIGKILL");
      });

      // the crash point held: deleted at the service, claimed here, no row yet
      const cut = await seen(rig, url, jobId!);
      expect(cut.purges.map((p) => [p.messageId, p.state, p.attempts])).toEqual([[messageId, "deleting", 1]]);
      expect(cut.purgedRows).toEqual([]);

      await setFaults(rig, { latencyMs: 0 });
      daemon = await startDaemon(rig);
      const done = await waitUntil(
        async () => {
          const s = await seen(rig!, url, jobId!);
          return s.purges[0]?.state === "done" ? s : null;
        },
        "the purge finished after the restart (not after the dead run's lease)",
        30_000,
        100,
      );
      expect(done.purgedRows.map((r) => r.detail)).toEqual([expect.objectContaining({ copy: "service", messageId })]);
      expect(done.purges[0]).toMatchObject({ attempts: 2, lastError: null });
      expect(done.jobState).toBe("delivered");

      const verify = await runCli(["audit", "verify", "--config", rig.configFile], { timeoutMs: 60_000 });
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      process.stdout.write(
        `purge fault (${backend}): killed after the service delete with the purge claimed and no row; restart finished it on try ${done.purges[0]!.attempts}, ${done.purgedRows.length} purged row, audit verify exit ${verify.code}\n`,
      );
    }, 180_000);
  },
);
