// The dispatcher is the destination policy's last line: a job queued before a rule changed (or
// put in the store by any path) is failed with the rule's reason, and nothing reaches the service.
import { afterEach, describe, expect, it } from "vitest";
import { destinationPolicy } from "../../src/recipients/recipients.js";
import { silentLogger } from "../../src/log/logger.js";
import { clientFor } from "../helpers/client.js";
import { startTestEmulator } from "../helpers/emulator.js";
import { newJob, tempStore, type TempStore } from "../helpers/store.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { EMU_KEY } from "./emulator-facts.js";
import { drain, serviceFaxes, TEST_QUEUE_TIMINGS } from "./rig.js";
import { defaultConfig, testDispatcher } from "../helpers/collaborators.js";

let emu: Awaited<ReturnType<typeof startTestEmulator>> | null = null;
let t: TempStore | null = null;
afterEach(async () => {
  await disposeEmulatorAndStore(emu, t);
  emu = null;
  t = null;
});

describe("destination policy at send time", () => {
  it("fails a queued premium-rate recipient and a newly denied one without sending them; the rest is sent", async () => {
    emu = await startTestEmulator({ delayMs: 50 });
    t = tempStore();
    const defaults = defaultConfig();
    // The rule arrived after the job was queued (as a SIGHUP would bring it).
    const gateway = { refuse: defaults.destinations.refuse, rules: [{ action: "deny" as const, prefix: "+1555999" }] };
    const client = clientFor(emu, EMU_KEY);
    const dispatcher = testDispatcher({
      store: t.store,
      clientFor: () => client,
      api: { baseUrl: emu.baseUrl, concurrency: 4, ratePerSecond: 1000 },
      queue: { ...TEST_QUEUE_TIMINGS },
      logger: silentLogger(),
      destinations: destinationPolicy(
        () => gateway,
        () => [{ name: "alice" }],
      ),
    });
    const { job } = await t.store.enqueue(
      newJob(t.dir, {
        recipients: [{ number: "+19005550199" }, { number: "+15559990001" }, { number: "+15557770123" }],
      }),
    );
    await drain({ dispatcher, store: t.store }, { held: false, maxMs: 10_000 });
    const done = (await t.store.getJob(job.id))!;
    const [premium, denied, ok] = done.recipients;
    expect(premium).toMatchObject({ state: "failed" });
    expect(premium!.lastError).toMatch(/destination not allowed: .*premium-rate/);
    expect(denied).toMatchObject({ state: "failed" });
    expect(denied!.lastError).toMatch(/destination not allowed: .*destinations\.rules\[0\] \(deny prefix \+1555999\)/);
    expect(ok).toMatchObject({ state: "delivered" });
    const faxes = await serviceFaxes(emu);
    expect(faxes.map((f) => f.faxNumber.replace(/\D/g, ""))).toEqual(["15557770123"]);
  });
});
