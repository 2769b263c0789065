// Small pieces the retention tests share: a finished job with a given service id, a received fax.
// (Their ledger is the real one, test/helpers/ledger.ts: a purge row is checked where it is written.)
import type { QueueStore } from "../../src/store/queue-store.js";
import { newJob, receivedInput } from "../helpers/store.js";

/** A job sent to `number` and delivered, known at the service as `messageId`; finished now. */
export async function finishedJob(
  store: QueueStore,
  dir: string,
  messageId: string,
  over: { user?: string; number?: string; tags?: string[] } = {},
): Promise<string> {
  const { job } = await store.enqueue(
    newJob(dir, {
      user: over.user ?? "alice",
      recipients: [{ number: over.number ?? "+15551230001" }],
      ...(over.tags ? { tags: over.tags } : {}),
    }),
  );
  const g = (await store.claimDue("retention-test", 10, 60_000)).find((c) => c.job.id === job.id);
  if (!g) throw new Error("the job was not claimed");
  await store.markAccepted({ jobId: job.id, idx: 0 }, g.sendId, { messageId }, 1);
  await store.complete({ jobId: job.id, idx: 0 }, { resultCode: "0", resultInfo: "OK" });
  // its outcome mail went out (a job whose notice is pending is kept for the notifier)
  for (const n of await store.claimNotifications("retention-test", 50, 60_000))
    await store.completeNotification(n.id, "sent");
  return job.id;
}

/** A received fax kept by the gateway, received now. */
export async function receivedFax(
  store: QueueStore,
  messageId: string,
  now: number,
  over: { user?: string; sender?: string; groups?: string[] } = {},
): Promise<string> {
  const { fax } = await store.keepReceived(
    receivedInput({ messageId, receivedAt: new Date(now).toISOString(), ...over }),
  );
  return fax.id;
}
