// Text reading's backlog on /metrics (issue 51), over real HTTP from a running gateway on each
// queue backend: received and sent fax texts by state, and how long the oldest text still to be
// read has waited, so an operator can alert when OCR does not keep up. OCR is off in these
// gateways, so nothing reads the texts the test queues: the counts are the test's own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gateway } from "../../src/main.js";
import { claimText, textFailed, textRead, textUnreadable } from "../../src/store/sql/received-text.js";
import { queueSentTexts } from "../../src/store/sql/sent-text.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { newJob, receivedInput } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("OCR metrics on PostgreSQL");

const ago = (s: number): string => new Date(Date.now() - s * 1000).toISOString();

/** Five received faxes whose texts end done, unreadable, failed, running and pending; one sent text pending. */
async function seed(gw: Gateway, dir: string): Promise<string[]> {
  const s = gw.store;
  const ids: string[] = [];
  for (let i = 1; i <= 5; i++) {
    const { fax } = await s.keepReceived(receivedInput({ readText: { waitsUntil: null } }));
    ids.push(fax.id);
  }
  const claim = async () => (await claimText(s.sql, { leaseMs: 600_000, pick: (u) => u[0]! }))!.faxId;
  await textRead(s.sql, await claim(), { body: "words", pdf: null, pages: 1 });
  await textUnreadable(s.sql, await claim(), "no words");
  await textFailed(s.sql, await claim(), "ocrmypdf exited 2", null);
  await claim(); // left running
  // the pending one has waited an hour and its next try is an hour away (the OCR duty, off in
  // this gateway, marks a due text unreadable); a done one older still counts for nothing
  await s.sql.run("UPDATE received_text SET created_at = ?, next_attempt_at = ? WHERE fax_id = ?", [
    ago(3600),
    ago(-3600),
    ids[4]!,
  ]);
  await s.sql.run("UPDATE received_text SET created_at = ? WHERE fax_id = ?", [ago(7200), ids[0]!]);

  const { job } = await s.enqueue(newJob(dir, { user: "alice", recipients: [{ number: "+15551230777" }] }));
  await s.sql.run("UPDATE jobs SET state = 'delivered', finished_at = ?, updated_at = ? WHERE id = ?", [
    ago(60),
    ago(60),
    job.id,
  ]);
  expect(await queueSentTexts(s.sql, { since: ago(86_400), changedSince: ago(86_400) })).toBe(1);
  await s.sql.run("UPDATE sent_text SET created_at = ? WHERE job_id = ?", [ago(600), job.id]);
  return ids;
}

async function scrape(rig: TestGateway): Promise<Map<string, number>> {
  const r = await fetch(`${rig.url("admin")}/metrics`);
  expect(r.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of (await r.text()).split("\n")) {
    const m = /^(faxgate_ocr_\w+\{[^}]*\}) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

describe.each(["sqlite", "postgres"] as const)("the OCR backlog on /metrics (%s)", (backend) => {
  let rig: TestGateway;
  let ids: string[] = [];
  beforeAll(async () => {
    if (backend === "postgres" && postgres.missing) return;
    rig = await startGateway({
      name: `ocr-metrics-${backend}`,
      log: "quiet",
      config: {
        admin: { listen: "127.0.0.1:0" },
        ...(backend === "postgres" ? { database: await postgres.database() } : {}),
      },
      beforeStart: async (gw, dir) => {
        ids = await seed(gw, dir);
      },
    });
  }, 120_000);
  afterAll(async () => {
    await rig?.stop();
  });

  it.skipIf(postgres.skips(backend))(
    "counts texts by kind and state, and the oldest one's wait; a finished text leaves the backlog",
    async () => {
      const m = await scrape(rig);
      const texts = (kind: string) =>
        Object.fromEntries(
          ["pending", "running", "done", "unreadable", "failed"].map((s) => [
            s,
            m.get(`faxgate_ocr_texts{kind="${kind}",state="${s}"}`),
          ]),
        );
      expect(texts("received")).toEqual({ pending: 1, running: 1, done: 1, unreadable: 1, failed: 1 });
      expect(texts("sent")).toEqual({ pending: 1, running: 0, done: 0, unreadable: 0, failed: 0 });
      const waited = (kind: string) => m.get(`faxgate_ocr_oldest_waiting_seconds{kind="${kind}"}`)!;
      expect(waited("received")).toBeGreaterThanOrEqual(3600);
      expect(waited("received")).toBeLessThan(3600 + 120);
      expect(waited("sent")).toBeGreaterThanOrEqual(600);
      expect(waited("sent")).toBeLessThan(600 + 120);

      // the hour-old text falls due and the gateway's duty finishes it (OCR off: unreadable); the
      // running one, queued moments ago, is now the oldest waiting
      await rig.gw.store.sql.run("UPDATE received_text SET next_attempt_at = ? WHERE fax_id = ?", [ago(1), ids[4]!]);
      const after = await waitUntil(
        async () => {
          const a = await scrape(rig);
          // finished, not only claimed: a claimed text is running, and still the oldest waiting
          const done =
            a.get('faxgate_ocr_texts{kind="received",state="pending"}') === 0 &&
            a.get('faxgate_ocr_texts{kind="received",state="unreadable"}') === 2;
          return done ? a : null;
        },
        "the due text finished",
        30_000,
        100,
      );
      expect(after.get('faxgate_ocr_texts{kind="received",state="unreadable"}')).toBe(2);
      expect(after.get('faxgate_ocr_oldest_waiting_seconds{kind="received"}')).toBeLessThan(600);
    },
    60_000,
  );
});
