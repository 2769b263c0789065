// Several gateways on one PostgreSQL queue, as processes: two daemons (own SMTP port, data and spool
// folders; one database) under SMTP load split between them.
// - crash loop: gateway A is SIGKILLed at random moments and restarted while B keeps running;
// - partition: the PostgreSQL cluster is stopped mid-load and started again.
// At the end every message that got a 250 has exactly one fax at the emulator (its records are the
// truth), and every job is final. Skips where PostgreSQL is not installed.
import path from "node:path";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { FINAL_JOB_STATES } from "../../src/store/transitions.js";
import { waitUntil } from "../helpers/wait.js";
import {
  disposeRig,
  emulatorFaxes,
  kill,
  makeRig,
  secondRig,
  numberFor,
  SHORT,
  startDaemon,
  tally,
  type Daemon,
  type Rig,
  onePagePdf,
  type Mail,
} from "./harness.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("PostgreSQL fault tests");

const KILLS = SHORT ? 4 : 15;

class Load {
  mails: Mail[] = [];
  /** SMTP reply codes of refused mails (a permanent 5xx would make a relay bounce the mail) */
  refusals: number[] = [];
  private next = 0;
  constructor(
    private readonly attachment: Buffer,
    private readonly base: number,
  ) {}

  newMail(): Mail {
    const i = this.base + this.next++;
    const numbers = i % 5 === 0 ? [numberFor(i), numberFor(i + 500_000)] : [numberFor(i)];
    const m = { id: i, numbers, accepted: false };
    this.mails.push(m);
    return m;
  }

  async send(port: number, m: Mail): Promise<void> {
    const t = nodemailer.createTransport({
      host: "127.0.0.1",
      port,
      secure: false,
      ignoreTLS: true,
      connectionTimeout: 2000,
      greetingTimeout: 2000,
      socketTimeout: 8000,
    });
    try {
      const info = await t.sendMail({
        from: "alice@example.com",
        to: m.numbers.map((n) => `${n.slice(1)}@fax.example.com`),
        subject: `pg ${m.id}`,
        messageId: `<pg-${m.id}@faults.test>`,
        text: "see attachment",
        attachments: [{ filename: "doc.pdf", content: this.attachment }],
      });
      if (/^250 /.test(info.response)) m.accepted = true;
    } catch (err) {
      // refused (451 while the database is away), reset or timed out: a relay would retry later
      const code = (err as { responseCode?: number }).responseCode;
      if (code) this.refusals.push(code);
    } finally {
      t.close();
    }
  }

  /** `workers` senders spread over `ports` until `until`, each retrying its own refused mail first. */
  async run(ports: () => number[], until: number, workers = 4): Promise<void> {
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        while (Date.now() < until) {
          const p = ports();
          const retry = this.mails.find((m) => !m.accepted && m.id % workers === w);
          await this.send(p[w % p.length]!, retry ?? this.newMail());
        }
      }),
    );
  }

  async drain(port: number): Promise<void> {
    for (let i = 0; i < 3; i++) for (const m of this.mails.filter((x) => !x.accepted)) await this.send(port, m);
  }
}

async function allFinal(url: string, dir: string): Promise<boolean> {
  const store = await PgStore.open({ url, dataDir: path.join(dir, "checker") });
  try {
    return (await store.listJobs({ limit: 100_000 })).every((j) =>
      (FINAL_JOB_STATES as readonly string[]).includes(j.state),
    );
  } finally {
    await store.close();
  }
}

async function verdict(label: string, rig: Rig, load: Load): Promise<void> {
  const expected = new Set(load.mails.filter((m) => m.accepted).flatMap((m) => m.numbers));
  const faxes = (await emulatorFaxes(rig)).filter(
    (f) => expected.has(f.faxNumber) || load.mails.some((m) => m.numbers.includes(f.faxNumber)),
  );
  const t = tally(expected, faxes);
  process.stdout.write(
    `${label}: mails ${load.mails.length} (${load.mails.filter((m) => m.accepted).length} got 250), recipients ${t.accepted}, faxed ${t.faxed}, lost ${t.lost.length}, duplicated ${t.duplicated.length}, faxes at the service ${faxes.length}\n`,
  );
  for (const n of t.duplicated) {
    // for the report: which sends made the duplicate (two sendIds: a resend; one: a double create)
    process.stdout.write(
      `  duplicate ${n}: ${JSON.stringify(faxes.filter((f) => f.faxNumber === n).map((f) => ({ id: f.messageId, send: f.cf?.faxgateSend, job: f.cf?.faxgateJob })))}\n`,
    );
  }
  expect(load.mails.filter((m) => !m.accepted)).toEqual([]);
  expect(t.lost).toEqual([]);
  expect(t.duplicated).toEqual([]);
}

describe.skipIf(postgres.missing !== null)("two gateways on one PostgreSQL queue", () => {
  let rig: Rig;
  let url: string;
  let a: Daemon | null = null;
  let b: Daemon | null = null;
  let attachment: Buffer;
  beforeAll(async () => {
    url = await postgres.database();
    // short leases: a killed gateway's sends are reconciled within seconds. The grace before a
    // lookup stays well above what a send the dead gateway left at the service may still take to
    // show in its history (the service finishes a request whose client died); the product's own
    // defaults are 60 s and 5 s
    rig = await makeRig({
      delayMs: 200,
      config: { database: url, queue: { lease: "3s", reconcileGrace: "8s" } },
    });
    attachment = await onePagePdf("two gateways");
  });
  afterAll(async () => {
    if (b) await kill(b, "SIGTERM");
    await disposeRig(rig, a);
  });

  it(`crash loop: gateway A SIGKILLed ${KILLS} times under load while B runs: 0 lost, 0 duplicated, every fax final`, async () => {
    const rigB = await secondRig(rig, "gw2");
    b = await startDaemon(rigB);
    const load = new Load(attachment, 0);
    for (let round = 0; round < KILLS; round++) {
      a = await startDaemon(rig);
      await load.run(() => [rig.smtpPort, rigB.smtpPort], Date.now() + 500 + Math.random() * 2000);
      await kill(a);
      a = null;
      // B alone for a moment: it must take A's share, leases and all
      await load.run(() => [rigB.smtpPort], Date.now() + 300);
    }
    a = await startDaemon(rig);
    await load.drain(rigB.smtpPort);
    await waitUntil(() => allFinal(url, rig.dir), "every job final", 180_000, 500);
    await verdict(`pg crash loop (kills ${KILLS})`, rig, load);
  });

  it("partition: PostgreSQL stopped mid-load and started again: nothing lost, nothing sent twice", async () => {
    const rigB = await secondRig(rig, "gw2");
    if (!a) a = await startDaemon(rig);
    if (!b) b = await startDaemon(rigB);
    const load = new Load(attachment, 200_000);
    const ports = () => [rig.smtpPort, rigB.smtpPort];
    await load.run(ports, Date.now() + 1500);
    postgres.cluster!.stop();
    const downAt = Date.now();
    // SMTP keeps answering (451) while the queue is away: nothing stalls
    await load.run(ports, Date.now() + (SHORT ? 2000 : 5000));
    const refusedWhileDown = load.mails.filter((m) => !m.accepted).length;
    postgres.cluster!.start();
    process.stdout.write(
      `partition: database away ${Date.now() - downAt} ms, ${refusedWhileDown} mails refused meanwhile (to be retried)\n`,
    );
    await load.run(ports, Date.now() + 1500);
    await load.drain(rig.smtpPort);
    await waitUntil(() => allFinal(url, rig.dir), "every job final", 180_000, 500);
    await verdict("pg partition", rig, load);
    expect(refusedWhileDown).toBeGreaterThan(0); // the outage was real
    expect(load.refusals.length).toBeGreaterThan(0);
    expect(load.refusals.filter((c) => c >= 500)).toEqual([]); // our trouble is never a 5xx
  });
});
