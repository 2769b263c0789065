// The queue's state machine as one table (src/store/transitions.ts): every transition refuses a
// recipient in a state the table does not list, writes one event per step, and the schema
// upgrade from version 1 keeps every row. Real SQLite files in temp folders.
import Database from "better-sqlite3";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { PARKED, TRANSITIONS, type Transition, type TransitionName } from "../../src/store/transitions.js";
import { RECIPIENT_STATES, type RecipientState } from "../../src/store/types.js";
import { manualClock, newJob, tempStore, type TempStore } from "../helpers/store.js";

let t: TempStore;
afterEach(() => t?.cleanup());

const SEND = "S-test";

/** Forces recipient 0 of a fresh job into `state` by hand (as a crash or another process might leave it). */
async function jobIn(state: RecipientState): Promise<{ jobId: string; raw: Database.Database }> {
  const { job } = await t.store.enqueue(newJob(t.dir));
  const raw = new Database(path.join(t.dir, "data", "faxgate.db"));
  raw
    .prepare("UPDATE recipients SET state = ?, send_id = ?, message_id = ? WHERE job_id = ?")
    .run(state, SEND, `m-${job.id}`, job.id);
  return { jobId: job.id, raw };
}

function stateOf(raw: Database.Database, jobId: string): RecipientState {
  return (raw.prepare("SELECT state FROM recipients WHERE job_id = ?").get(jobId) as { state: RecipientState }).state;
}

/** Each transition method, called the way the dispatcher or an operator calls it; true when it moved the recipient. */
const CALLS: Partial<Record<TransitionName, (jobId: string) => Promise<boolean>>> = {
  accept: (jobId) => t.store.markAccepted({ jobId, idx: 0 }, SEND, { messageId: "m-new" }),
  lose: (jobId) => t.store.markUnknown({ jobId, idx: 0 }, SEND, "lost"),
  postpone: (jobId) => t.store.postponeUnknown({ jobId, idx: 0 }, SEND, "later", new Date(Date.now() + 60_000)),
  defer: (jobId) =>
    t.store.defer(
      { jobId, idx: 0 },
      { error: "busy", nextAttemptAt: new Date(Date.now() + 60_000), expect: [...RECIPIENT_STATES] },
    ),
  fail: (jobId) => t.store.fail({ jobId, idx: 0 }, { reason: "no", expect: [...RECIPIENT_STATES] }),
  deliver: (jobId) => t.store.complete({ jobId, idx: 0 }, { resultCode: "0", resultInfo: "OK" }),
  progress: async (jobId) => {
    const before = (await t.store.listEvents(jobId)).length;
    await t.store.recordProgress({ jobId, idx: 0 }, { pagesComplete: 7, pagesCount: 9 });
    return (await t.store.listEvents(jobId)).length > before;
  },
  wake: async (_jobId) => (await t.store.wakeDeferred("alice", "zz")) > 0,
  retry: (jobId) =>
    t.store.operate(jobId, "retry").then(
      () => true,
      () => false,
    ),
  cancel: (jobId) =>
    t.store.operate(jobId, "cancel").then(
      () => true,
      () => false,
    ),
  hold: (jobId) =>
    t.store.operate(jobId, "hold").then(
      () => true,
      () => false,
    ),
  release: (jobId) =>
    t.store.operate(jobId, "release").then(
      () => true,
      () => false,
    ),
  claim: async () => (await t.store.claimDue("me", 10, 60_000)).length > 0,
  expire: async () => (await t.store.releaseExpired({ all: true })).unknown > 0,
  // a claim whose call never left (call_left 0) goes back to the queue instead
  unclaim: async (jobId) => {
    const raw = new Database(path.join(t.dir, "data", "faxgate.db"));
    raw.prepare("UPDATE recipients SET call_left = 0 WHERE job_id = ?").run(jobId);
    raw.close();
    await t.store.releaseExpired({ all: true });
    return (await t.store.listEvents(jobId)).some((e) => e.transition === "unclaim");
  },
};

describe("the transition table is the guard", () => {
  for (const [name, call] of Object.entries(CALLS) as Array<[TransitionName, (jobId: string) => Promise<boolean>]>) {
    it(`${name}: moves a recipient only from ${TRANSITIONS[name].from.join(", ")}`, async () => {
      t = tempStore();
      for (const state of RECIPIENT_STATES) {
        const { jobId, raw } = await jobIn(state);
        try {
          // wake looks for the error prefix a key hold writes
          raw
            .prepare(
              "UPDATE recipients SET last_error = 'zz held', locked_until = '2000-01-01T00:00:00.000Z' WHERE job_id = ?",
            )
            .run(jobId);
          const allowed = (TRANSITIONS[name].from as readonly RecipientState[]).includes(state);
          if (allowed && state === "unknown" && (TRANSITIONS[name] as Transition).unknownIfParked) {
            // only a parked send: one still being looked up stays where it is
            expect({ state, moved: await call(jobId) }).toEqual({ state, moved: false });
            raw.prepare(`UPDATE recipients SET last_error = '${PARKED}: test' WHERE job_id = ?`).run(jobId);
          }
          const moved = await call(jobId);
          expect({ state, moved }).toEqual({ state, moved: allowed });
          if (!allowed) expect(stateOf(raw, jobId)).toBe(state);
          else expect(stateOf(raw, jobId)).toBe(TRANSITIONS[name].to);
          // a step that happened is in the history, one that was refused is not
          const steps = (await t.store.listEvents(jobId)).filter((e) => e.transition === name);
          expect(steps).toHaveLength(allowed ? 1 : 0);
          if (allowed) expect(steps[0]).toMatchObject({ idx: 0, from: state, to: TRANSITIONS[name].to });
          // leave nothing for the next state's claim or expiry to pick up
          raw.prepare("UPDATE recipients SET state = 'cancelled' WHERE job_id = ?").run(jobId);
        } finally {
          raw.close();
        }
      }
    });
  }

  it("a caller's `expect` narrows the table, never widens it", async () => {
    t = tempStore();
    const { jobId, raw } = await jobIn("queued");
    try {
      // defer may not start from queued, whatever the caller expects
      expect(
        await t.store.defer({ jobId, idx: 0 }, { error: "x", nextAttemptAt: new Date(), expect: ["queued"] }),
      ).toBe(false);
      raw.prepare("UPDATE recipients SET state = 'processing' WHERE job_id = ?").run(jobId);
      expect(await t.store.fail({ jobId, idx: 0 }, { reason: "x", expect: ["unknown"] })).toBe(false);
      expect(await t.store.fail({ jobId, idx: 0 }, { reason: "x", expect: ["processing"] })).toBe(true);
    } finally {
      raw.close();
    }
  });
});

describe("a job's history", () => {
  it("every step of a send is one event, in order, with its reason", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const { job } = await t.store.enqueue(newJob(t.dir));
    const [g] = await t.store.claimDue("me", 10, 60_000);
    const k = { jobId: job.id, idx: 0 };
    expect(
      await t.store.defer(k, {
        error: "API_SERVER: 503",
        nextAttemptAt: new Date(clock.now() + 1000),
        sendId: g!.sendId,
      }),
    ).toBe(true);
    clock.advance(2000);
    const [g2] = await t.store.claimDue("me", 10, 60_000);
    expect(await t.store.markAccepted(k, g2!.sendId, { messageId: "m-1" })).toBe(true);
    await t.store.recordProgress(k, { pagesComplete: 1, pagesCount: 2 });
    await t.store.recordProgress(k, { pagesComplete: 1, pagesCount: 2 }); // nothing new: no step
    expect(await t.store.complete(k, { resultCode: "0", resultInfo: "OK", pagesComplete: 2 })).toBe(true);
    const events = await t.store.listEvents(job.id);
    expect(events.map((e) => [e.transition, e.from, e.to])).toEqual([
      ["enqueue", null, "queued"],
      ["claim", "queued", "sending"],
      ["defer", "sending", "deferred"],
      ["claim", "deferred", "sending"],
      ["accept", "sending", "processing"],
      ["progress", "processing", "processing"],
      ["deliver", "processing", "delivered"],
    ]);
    expect(events[2]!.detail).toBe("API_SERVER: 503");
    expect(events[5]!.detail).toBe("page 1 of 2");
    expect(events.every((e) => e.jobId === job.id && !Number.isNaN(Date.parse(e.at)))).toBe(true);
  });

  it("corrupt input and operator actions are in the history too", async () => {
    t = tempStore();
    const corrupt = await t.store.enqueueCorrupt({
      source: "smtp",
      user: "alice",
      reason: "the message could not be parsed",
      original: newJob(t.dir).documents[0]!,
    });
    expect((await t.store.listEvents(corrupt.id)).map((e) => [e.transition, e.to, e.detail])).toEqual([
      ["corrupt", "corrupt", "the message could not be parsed"],
    ]);
    const { job } = await t.store.enqueue(
      newJob(t.dir, { recipients: [{ number: "+15550000001" }, { number: "+15550000002" }] }),
    );
    await t.store.operate(job.id, "hold");
    await t.store.operate(job.id, "cancel");
    await t.store.operate(job.id, "retry");
    const steps = (await t.store.listEvents(job.id)).map((e) => `${e.transition}:${e.idx}:${e.from}>${e.to}`);
    expect(steps).toEqual([
      "enqueue:null:null>queued",
      "hold:0:queued>held",
      "hold:1:queued>held",
      "cancel:0:held>cancelled",
      "cancel:1:held>cancelled",
      "retry:0:cancelled>queued",
      "retry:1:cancelled>queued",
    ]);
  });

  it("purge removes a job's history with it", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const { job } = await t.store.enqueue(newJob(t.dir));
    await t.store.operate(job.id, "cancel");
    for (const n of await t.store.listNotifications({ jobId: job.id }))
      await t.store.completeNotification(n.id, "sent");
    clock.advance(10 * 86_400_000);
    expect(await t.store.purge(86_400_000)).toBe(1);
    expect(await t.store.listEvents(job.id)).toEqual([]);
  });
});

describe("the upgrade to the checked schema", () => {
  it("a version 1 queue keeps every job, recipient, notification and value, and gains the CHECKs", async () => {
    t = tempStore();
    const dir = path.join(t.dir, "v1");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(path.join(dir, "documents"), { recursive: true });
    const v1 = new Database(path.join(dir, "faxgate.db"));
    v1.pragma("journal_mode = WAL");
    v1.exec(MIGRATIONS[0]!);
    v1.pragma("user_version = 1");
    const now = "2026-03-02T10:00:00.000Z";
    v1.prepare(
      `INSERT INTO jobs (id, source, user, state, cover, documents, tags, meta, created_at, updated_at) VALUES ('FG1', 'cli', 'alice', 'active', '{"enabled":false}', '[]', '[]', '{}', ?, ?)`,
    ).run(now, now);
    v1.prepare(
      `INSERT INTO recipients (job_id, idx, number, state, budget_from, created_at, updated_at, message_id) VALUES ('FG1', 0, '+15550000001', 'processing', ?, ?, ?, 'm-1')`,
    ).run(now, now, now);
    v1.prepare(
      `INSERT INTO recipients (job_id, idx, number, state, budget_from, created_at, updated_at) VALUES ('FG1', 1, '+15550000002', 'deferred', ?, ?, ?)`,
    ).run(now, now, now);
    v1.prepare(
      `INSERT INTO notifications (kind, user, job_id, dedupe_key, payload, state, next_attempt_at, created_at) VALUES ('outcome', 'alice', 'FG1', 'k1', '{"jobId":"FG1"}', 'pending', ?, ?)`,
    ).run(now, now);
    v1.prepare(`INSERT INTO kv (key, value) VALUES ('inbound:alice', 'cursor')`).run();
    v1.close();

    const store = SqliteStore.open({ dataDir: dir });
    try {
      const job = await store.getJob("FG1");
      expect(job?.state).toBe("active");
      expect(job?.recipients.map((r) => [r.number, r.state])).toEqual([
        ["+15550000001", "processing"],
        ["+15550000002", "deferred"],
      ]);
      expect((await store.listNotifications({ jobId: "FG1" })).map((n) => n.dedupeKey)).toEqual(["k1"]);
      expect(await store.getState("inbound:alice")).toBe("cursor");
      expect(await store.listEvents("FG1")).toEqual([]);
      // new notifications do not reuse an id
      const n2 = await store.enqueueNotification({
        kind: "outcome",
        user: "alice",
        jobId: "FG1",
        dedupeKey: "k2",
        payload: { jobId: "FG1" },
      });
      expect(n2.id).toBeGreaterThan(1);
      expect(await store.complete({ jobId: "FG1", idx: 0 }, { resultCode: "0" })).toBe(true);
      expect((await store.listEvents("FG1")).map((e) => e.transition)).toEqual(["deliver"]);
    } finally {
      await store.close();
    }
    const raw = new Database(path.join(dir, "faxgate.db"));
    try {
      expect(raw.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
      raw.pragma("foreign_keys = ON");
      expect(() => raw.prepare("UPDATE recipients SET state = 'bogus'").run()).toThrow(/CHECK constraint failed/);
      // the recipients still belong to their job: deleting the job takes them along
      raw.prepare("DELETE FROM jobs WHERE id = 'FG1'").run();
      expect(raw.prepare("SELECT COUNT(*) AS n FROM recipients").get()).toEqual({ n: 0 });
    } finally {
      raw.close();
    }
  });
});

describe("finding jobs: search, paging, counting", () => {
  it("searches numbers, names and subjects without regard to case, pages newest first, counts the same filter", async () => {
    const clock = manualClock();
    t = tempStore({ clock });
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      clock.advance(1000);
      const { job } = await t.store.enqueue(
        newJob(t.dir, {
          recipients: [
            { number: `+1555200${String(i).padStart(4, "0")}`, name: i === 3 ? "Dr. Jürgen MÜLLER" : undefined },
          ],
          cover: { enabled: true, subject: i === 7 ? "Quarterly INVOICE" : undefined },
          meta: i === 11 ? { origin: { subject: "Referral for Mrs Smith" } } : {},
        }),
      );
      ids.push(job.id);
    }
    const newestFirst = [...ids].reverse();
    expect((await t.store.listJobs({ search: "müller" })).map((j) => j.id)).toEqual([ids[3]]);
    expect((await t.store.listJobs({ search: "invoice" })).map((j) => j.id)).toEqual([ids[7]]);
    expect((await t.store.listJobs({ search: "SMITH" })).map((j) => j.id)).toEqual([ids[11]]);
    expect((await t.store.listJobs({ search: "2000012" })).map((j) => j.id)).toEqual([ids[12]]);
    expect(await t.store.listJobs({ search: "nobody" })).toEqual([]);
    // LIKE's wildcards are plain characters in a search
    expect(await t.store.countJobs({ search: "%" })).toBe(0);
    expect(await t.store.countJobs({ search: "_" })).toBe(0);
    expect(await t.store.countJobs({ search: "dr._j" })).toBe(0);
    expect(await t.store.countJobs({ search: "+1555200" })).toBe(25);
    expect(await t.store.countJobs({ search: "müller" })).toBe(1);

    const page1 = await t.store.listJobs({ limit: 10 });
    const page3 = await t.store.listJobs({ limit: 10, offset: 20 });
    expect(page1.map((j) => j.id)).toEqual(newestFirst.slice(0, 10));
    expect(page3.map((j) => j.id)).toEqual(newestFirst.slice(20));
    expect(await t.store.countJobs()).toBe(25);

    // updatedSince: only jobs changed at or after that time (the console's live updates)
    const mark = new Date(clock.now() + 500).toISOString();
    clock.advance(1000);
    await t.store.operate(ids[5]!, "cancel");
    expect((await t.store.listJobs({ updatedSince: mark })).map((j) => j.id)).toEqual([ids[5]]);
    expect(await t.store.countJobs({ updatedSince: mark, state: "cancelled" })).toBe(1);
    expect(await t.store.countJobs({ updatedSince: mark, state: "queued" })).toBe(0);
  });

  it("lists a page, a user's jobs and a search among 10,000 jobs (timings: bench/console-list)", async () => {
    t = tempStore();
    const raw = new Database(path.join(t.dir, "data", "faxgate.db"));
    const base = Date.parse("2026-03-01T00:00:00.000Z");
    raw.transaction(() => {
      const job = raw.prepare(
        `INSERT INTO jobs (id, source, user, state, cover, documents, tags, meta, created_at, updated_at) VALUES (?, 'smtp', ?, 'delivered', '{"enabled":true,"subject":"Letter"}', '[]', '[]', '{}', ?, ?)`,
      );
      const rec = raw.prepare(
        `INSERT INTO recipients (job_id, idx, number, name, state, budget_from, created_at, updated_at) VALUES (?, 0, ?, ?, 'delivered', ?, ?, ?)`,
      );
      for (let i = 0; i < 10_000; i++) {
        const at = new Date(base + i * 1000).toISOString();
        const id = `FGBULK${String(i).padStart(10, "0")}`;
        job.run(id, i % 2 ? "alice" : "bob", at, at);
        rec.run(id, `+1555${String(i).padStart(7, "0")}`, `Contact ${i}`, at, at, at);
      }
    })();
    raw.close();
    const page = await t.store.listJobs({ limit: 50, offset: 100 });
    const total = await t.store.countJobs();
    const user = await t.store.listJobs({ user: "alice", state: "delivered", limit: 50 });
    const found = await t.store.listJobs({ search: "contact 9999", limit: 50 });
    expect(page).toHaveLength(50);
    expect(page[0]!.id).toBe("FGBULK0000009899");
    expect(total).toBe(10_000);
    expect(user.every((j) => j.user === "alice")).toBe(true);
    expect(found.map((j) => j.id)).toEqual(["FGBULK0000009999"]);
  });
});
