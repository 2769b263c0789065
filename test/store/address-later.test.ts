// Print now, address later, in the queue (both backends): a job enqueued awaitingAddress waits
// held behind a placeholder recipient that nothing sends, releases or retries; `address` gives it
// its numbers and it is claimed like any job; `expireWaiting("address")` ends those waiting too long,
// and the step to final queues the owner's notice.
import { describe, expect, it } from "vitest";
import { manualClock, newJob } from "../helpers/store.js";
import { type BackendName, usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("address-later store tests: PostgreSQL");

describe.each(["sqlite", "postgres"] as BackendName[])("a job waiting for an address on %s", (backend) => {
  it.skipIf(postgres.skips(backend))("waits, is never sent or released, is addressed and then claimed", async () => {
    const clock = manualClock();
    const t = await postgres.open(backend, { clock });
    const { store } = t;
    const { job } = await store.enqueue({ ...newJob(t.dir), recipients: [], awaitingAddress: true });
    expect(job.state).toBe("held");
    expect(job.recipients).toMatchObject([{ idx: 0, number: "", state: "held", lastError: "needs an address" }]);
    expect(await store.claimDue("w", 10, 60_000)).toEqual([]);
    await expect(store.operate(job.id, "release")).rejects.toThrow(/no held recipients/);

    const addressed = await store.address(job.id, {
      recipients: [{ number: "+15551234567", name: "Acme" }, { number: "+15557654321" }, { number: "+15551234567" }],
      cover: { enabled: true, subject: "Hi" },
    });
    expect(addressed.state).toBe("queued");
    expect(addressed.recipients.map((r) => [r.idx, r.number, r.state])).toEqual([
      [0, "+15551234567", "queued"],
      [1, "+15557654321", "queued"],
    ]);
    expect(addressed.cover).toEqual({ enabled: true, subject: "Hi" });
    await expect(
      store.address(job.id, { recipients: [{ number: "+15550001111" }], cover: { enabled: false } }),
    ).rejects.toThrow(/not waiting for an address/);
    const claimed = await store.claimDue("w", 10, 60_000);
    expect(claimed.flatMap((g) => g.recipients.map((r) => r.number)).sort()).toEqual(["+15551234567", "+15557654321"]);
    expect((await store.listEvents(job.id)).map((e) => e.transition)).toEqual(
      expect.arrayContaining(["enqueue", "address"]),
    );
  });

  it.skipIf(postgres.skips(backend))(
    "expires after the wait, cannot be retried, and its owner gets a notice",
    async () => {
      const clock = manualClock();
      const t = await postgres.open(backend, { clock });
      const { store } = t;
      const { job } = await store.enqueue({ ...newJob(t.dir), recipients: [], awaitingAddress: true });
      const { job: sent } = await store.enqueue(newJob(t.dir));
      clock.advance(10 * 3_600_000);
      expect(
        await store.expireWaiting("address", new Date(clock.now() - 24 * 3_600_000), "no number in 24 hours"),
      ).toEqual([]);
      clock.advance(15 * 3_600_000);
      const ended = await store.expireWaiting(
        "address",
        new Date(clock.now() - 24 * 3_600_000),
        "no number in 24 hours",
      );
      expect(ended.map((j) => [j.id, j.state])).toEqual([[job.id, "cancelled"]]);
      expect(ended[0]!.recipients[0]!.lastError).toBe("needs an address: no number in 24 hours");
      expect((await store.getJob(sent.id))!.state).toBe("queued");
      await expect(store.operate(job.id, "retry")).rejects.toThrow(/can be retried/);
      expect((await store.listNotifications({ jobId: job.id })).map((n) => n.kind)).toEqual(["outcome"]);
    },
  );
});
