// A leaver's faxes already accepted (issue 50): their key is gone, so they are sent and followed
// with the office's admin key, or, without one, fail at once saying the sender has left. The
// dispatcher against the emulator over real HTTPS, with a real store.
import { afterEach, describe, expect, it } from "vitest";
import { LEAVER_NO_ADMIN, leaverAwareClients } from "../../src/dispatch/leaver-client.js";
import type { FaxApi } from "../../src/fax/types.js";
import { clientFor } from "../helpers/client.js";
import { testDispatcher } from "../helpers/collaborators.js";
import { startTestEmulator } from "../helpers/emulator.js";
import { newJob, tempStore, type TempStore } from "../helpers/store.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { EMU_KEY } from "./emulator-facts.js";
import { drain, serviceFaxes, TEST_QUEUE_TIMINGS } from "./rig.js";

let emu: Awaited<ReturnType<typeof startTestEmulator>> | null = null;
let t: TempStore | null = null;
afterEach(async () => {
  await disposeEmulatorAndStore(emu, t);
  emu = null;
  t = null;
});

/** carol has left; alice is a user. `admin`: whether the office set api.adminKey. */
async function setup(admin: boolean) {
  emu = await startTestEmulator({ delayMs: 20 });
  t = tempStore();
  const office = clientFor(emu, EMU_KEY);
  const own = (user: string): FaxApi => {
    // as the daemon's ApiClients does: a name that is no user has no client
    if (user !== "alice") throw new Error(`no configured user named "${user}"`);
    return office;
  };
  const dispatcher = testDispatcher({
    store: t.store,
    clientFor: leaverAwareClients({
      clientFor: own,
      hasLeft: (u) => u === "carol",
      admin: () => (admin ? office : null),
    }),
    api: { baseUrl: emu.baseUrl, concurrency: 4, ratePerSecond: 1000 },
    queue: { ...TEST_QUEUE_TIMINGS },
  });
  return { store: t.store, dispatcher };
}

describe("a leaver's queued faxes", () => {
  it("fail at once saying the sender has left when there is no admin key; nothing reaches the service", async () => {
    const s = await setup(false);
    const { job } = await s.store.enqueue(newJob(t!.dir, { user: "carol", recipients: [{ number: "+15557770123" }] }));
    await drain(s);
    const done = (await s.store.getJob(job.id))!;
    expect(done.state).toBe("failed");
    expect(done.recipients[0]!.state).toBe("failed");
    expect(done.recipients[0]!.lastError).toContain(LEAVER_NO_ADMIN);
    expect(await serviceFaxes(emu!)).toEqual([]);
  });

  it("are sent and followed to delivery on the admin key", async () => {
    const s = await setup(true);
    const { job } = await s.store.enqueue(newJob(t!.dir, { user: "carol", recipients: [{ number: "+15557770123" }] }));
    await drain(s);
    const done = (await s.store.getJob(job.id))!;
    expect([done.state, done.recipients[0]!.lastError]).toEqual(["delivered", null]);
    expect(await serviceFaxes(emu!)).toHaveLength(1);
  });
});
