// What the dispatcher's tests share: the test queue timings, a drain that runs passes until the
// queue is empty, and the emulator's record of what was faxed.
import type { QueueConfig } from "../../src/config/schema.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { emulatorCall } from "../helpers/client.js";
import type { TestEmulator } from "../helpers/emulator.js";
import { waitUntil } from "../helpers/wait.js";
import type { EmulatedFax } from "./emulator-facts.js";

/** Queue timings short enough for tests: retries, polls, grace and leases in tenths of a second. */
export const TEST_QUEUE_TIMINGS = {
  retrySchedule: [50],
  pollInterval: 100,
  reconcileGrace: 100,
  lease: 5000,
} satisfies Partial<QueueConfig>;

/**
 * Runs dispatcher passes until no job is queued or active (nor held, unless `held` is false);
 * bounded, so a bug fails naming the recipients' states instead of hanging.
 */
export async function drain(
  s: { dispatcher: Pick<Dispatcher, "runOnce">; store: Pick<QueueStore, "counts"> },
  opts: { held?: boolean; maxMs?: number } = {},
): Promise<void> {
  let last = "";
  try {
    await waitUntil(
      async () => {
        await s.dispatcher.runOnce();
        const c = await s.store.counts();
        last = JSON.stringify(c.recipients);
        return c.jobs.queued + c.jobs.active + (opts.held === false ? 0 : c.jobs.held) === 0;
      },
      "the queue to drain",
      opts.maxMs ?? 30_000,
      40,
    );
  } catch {
    throw new Error(`queue did not drain: ${last}`);
  }
}

/** Every fax the emulator holds, as GET /_emulator/faxes lists them. */
export async function serviceFaxes(emu: TestEmulator): Promise<EmulatedFax[]> {
  return (await emulatorCall(emu, "GET", "/_emulator/faxes")) as EmulatedFax[];
}
