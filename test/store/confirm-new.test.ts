// A first fax to a new number, in the queue (both backends): a job enqueued awaitingConfirmation
// is held (its new numbers named) and nothing claims, releases or retries it; `confirm` queues all
// its recipients once (a second confirm moves nothing); `expireWaiting("confirmation")` ends those past the
// window with the owner's notice; `faxedNumbers` counts only numbers the service took a fax to.
import { describe, expect, it } from "vitest";
import { newNumbers, waitsForConfirmation } from "../../src/store/job-state.js";
import { manualClock, newJob } from "../helpers/store.js";
import { type BackendName, usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("confirm-new store tests: PostgreSQL");

const OLD = "+15551230001";
const NEW = "+15557770002";

describe.each(["sqlite", "postgres"] as BackendName[])(
  "a fax waiting for its owner's confirmation on %s",
  (backend) => {
    const skip = postgres.skips(backend);

    it.skipIf(skip)("counts as faxed only a number the service took a fax to, for that user", async () => {
      const t = await postgres.open(backend, { clock: manualClock() });
      const { store } = t;
      const send = async (
        user: string,
        number: string,
        end: "deliver" | "fail-at-service" | "fail-before" | "hold",
      ) => {
        const { job } = await store.enqueue(newJob(t!.dir, { user, recipients: [{ number }] }));
        if (end === "hold") return store.operate(job.id, "hold");
        const [g] = await store.claimDue("w", 1, 60_000);
        const key = { jobId: job.id, idx: 0 };
        if (end === "fail-before") return store.fail(key, { reason: "refused before sending" });
        await store.markAccepted(key, g!.sendId, { messageId: `m-${number}` });
        if (end === "deliver")
          return store.complete(key, { resultCode: "0", resultInfo: "ok", errorCode: "0", errorInfo: "" });
        return store.fail(key, { reason: "busy" });
      };
      await send("alice", "+15550000001", "deliver");
      await send("alice", "+15550000002", "fail-at-service");
      await send("alice", "+15550000003", "fail-before");
      await send("alice", "+15550000004", "hold");
      await send("bob", "+15550000005", "deliver");
      const asked = ["+15550000001", "+15550000002", "+15550000003", "+15550000004", "+15550000005", "+15550000006"];
      expect((await store.faxedNumbers("alice", asked)).sort()).toEqual(["+15550000001", "+15550000002"]);
      expect(await store.faxedNumbers("bob", asked)).toEqual(["+15550000005"]);
      expect(await store.faxedNumbers("alice", [])).toEqual([]);
    });

    it.skipIf(skip)("waits, is never claimed, released or retried, and one confirm queues it", async () => {
      const t = await postgres.open(backend, { clock: manualClock() });
      const { store } = t;
      const { job } = await store.enqueue(
        newJob(t.dir, { source: "smtp", recipients: [{ number: OLD }, { number: NEW }], awaitingConfirmation: [NEW] }),
      );
      expect(job.state).toBe("held");
      expect(waitsForConfirmation(job)).toBe(true);
      expect(newNumbers(job)).toEqual([NEW]);
      expect(job.recipients.map((r) => r.lastError)).toEqual([
        "waits for its owner to confirm a new number of the same fax in the console",
        "waits for its owner to confirm this new number in the console",
      ]);
      expect(await store.claimDue("w", 10, 60_000)).toEqual([]);
      // an operator sees it but cannot send it in the owner's place
      await expect(store.operate(job.id, "release")).rejects.toThrow(/no held recipients/);
      await expect(store.operate(job.id, "retry")).rejects.toThrow(/can be retried/);

      const [a, b] = await Promise.all([store.confirm(job.id, "alice"), store.confirm(job.id, "alice")]);
      expect([a.moved, b.moved].sort()).toEqual([0, 2]);
      expect(a.job.state).toBe("queued");
      expect(a.job.recipients.every((r) => r.lastError === null)).toBe(true);
      const claimed = await store.claimDue("w", 10, 60_000);
      expect(claimed.flatMap((g) => g.recipients.map((r) => r.number)).sort()).toEqual([OLD, NEW]);
      const events = (await store.listEvents(job.id)).filter((e) => e.transition === "confirm");
      expect(events.map((e) => [e.idx, e.detail])).toEqual([
        [0, "by alice"],
        [1, "by alice"],
      ]);
    });

    it.skipIf(skip)("expires unconfirmed with a notice, cannot then be confirmed or retried", async () => {
      const clock = manualClock();
      const t = await postgres.open(backend, { clock });
      const { store } = t;
      const { job } = await store.enqueue(
        newJob(t.dir, { source: "smtp", recipients: [{ number: NEW }], awaitingConfirmation: [NEW] }),
      );
      const { job: other } = await store.enqueue(newJob(t.dir));
      const held = await store.operate(other.id, "hold");
      expect(held.state).toBe("held");
      clock.advance(23 * 3_600_000);
      expect(
        await store.expireWaiting(
          "confirmation",
          new Date(clock.now() - 24 * 3_600_000),
          "not confirmed within 24 hours",
        ),
      ).toEqual([]);
      clock.advance(2 * 3_600_000);
      const ended = await store.expireWaiting(
        "confirmation",
        new Date(clock.now() - 24 * 3_600_000),
        "not confirmed within 24 hours",
      );
      expect(ended.map((j) => [j.id, j.state])).toEqual([[job.id, "cancelled"]]);
      expect(ended[0]!.recipients[0]!.lastError).toBe("not confirmed by its owner: not confirmed within 24 hours");
      // an operator's hold is not a confirmation wait
      expect((await store.getJob(other.id))!.state).toBe("held");
      expect((await store.confirm(job.id, "alice")).moved).toBe(0);
      await expect(store.operate(job.id, "retry")).rejects.toThrow(/can be retried/);
      expect(await store.claimDue("w", 10, 60_000)).toEqual([]);
      expect((await store.listNotifications({ jobId: job.id })).map((n) => n.kind)).toEqual(["outcome"]);
    });
  },
);
