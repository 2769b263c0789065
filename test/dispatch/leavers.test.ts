// A leaver's faxes already accepted (issue 50): their key is gone, so they are sent and followed
// with the office's admin key, or, without one, fail at once saying the sender has left. The
// dispatcher against the emulator over real HTTPS, with a real store.
import { afterEach, describe, expect, it } from "vitest";
import { LEAVER_NO_ADMIN, leaverAwareClients } from "../../src/dispatch/leaver-client.js";
import type { FaxApi } from "../../src/fax/types.js";
import { createLogger } from "../../src/log/logger.js";
import { clientFor } from "../helpers/client.js";
import { testDispatcher } from "../helpers/collaborators.js";
import { startTestEmulator, TEST_KEYS } from "../helpers/emulator.js";
import { newJob, tempStore, type TempStore } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { EMU_KEY } from "./emulator-facts.js";
import { drain, serviceFaxes, TEST_QUEUE_TIMINGS } from "./rig.js";

const HOUR = 3_600_000;
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

/**
 * carol's fax sent on her own minted key and still at the service (the emulator's clock gives it
 * an hour) when she leaves: her key is deleted at the service, as the key minter does.
 */
async function inProgressWhenLeaving(withAdmin: boolean) {
  // whether api.adminKey is set (a reload may set it later)
  const adminKey = { set: withAdmin };
  const skew = { ms: 0 };
  emu = await startTestEmulator({ delayMs: HOUR, clock: { now: () => Date.now() + skew.ms } });
  t = tempStore();
  const admin = clientFor(emu, TEST_KEYS.admin);
  const bobId = emu.keys.find((k) => k.token === TEST_KEYS.bob)!.userId;
  const minted = await admin.createApiKey({ name: "faxgate carol", userId: bobId, access: "print_driver" });
  const own = clientFor(emu, minted.token!);
  let left = false;
  const logs: string[] = [];
  const dispatcher = testDispatcher({
    store: t.store,
    clientFor: leaverAwareClients({
      clientFor: (user) => {
        if (user !== "carol" || left) throw new Error(`no configured user named "${user}"`);
        return own;
      },
      hasLeft: (u) => left && u === "carol",
      admin: () => (adminKey.set ? admin : null),
    }),
    api: { baseUrl: emu.baseUrl, concurrency: 4, ratePerSecond: 1000 },
    queue: { ...TEST_QUEUE_TIMINGS },
    logger: createLogger({ level: "debug", destination: { write: (l: string) => void logs.push(l) } }),
  });
  const store = t.store;
  const { job } = await store.enqueue(newJob(t.dir, { user: "carol", recipients: [{ number: "+15557770124" }] }));
  const sent = await waitUntil(async () => {
    await dispatcher.runOnce();
    const r = (await store.getJob(job.id))!.recipients[0]!;
    return r.state === "processing" ? r : null;
  }, "carol's fax at the service");
  await admin.deleteApiKey(minted.uuid);
  left = true;
  return { store, dispatcher, job, messageId: sent.messageId!, own, admin, adminKey, skew, logs };
}

describe("a leaver's fax already at the service", () => {
  it("is seen by the account's admin key, not by her deleted key nor another user's, and followed to delivered", async () => {
    const s = await inProgressWhenLeaving(true);
    // the service keeps a fax with its user, not its key (fax-api.md: a key belongs to a user;
    // an admin key acts for the account's users): her deleted key is refused, another user's key
    // does not see it, the admin key does
    await expect(s.own.faxInfo(s.messageId)).rejects.toMatchObject({ status: 401 });
    await expect(clientFor(emu!, TEST_KEYS.alice).faxInfo(s.messageId)).rejects.toMatchObject({ status: 404 });
    expect((await s.admin.faxInfo(s.messageId)).status).toBe("processing");
    // the service finishes it; the gateway follows it on the admin key
    s.skew.ms += 2 * HOUR;
    await drain(s);
    const done = (await s.store.getJob(s.job.id))!;
    expect([done.state, done.recipients[0]!.state, done.recipients[0]!.lastError]).toEqual([
      "delivered",
      "delivered",
      null,
    ]);
  });

  it("without an admin key stays processing (the service may deliver it), the operator told why, until one is set", async () => {
    const s = await inProgressWhenLeaving(false);
    s.skew.ms += 2 * HOUR;
    for (let i = 0; i < 3; i++) await s.dispatcher.runOnce();
    // not failed: the service has it and may well deliver it; it cannot be followed, and the log says why
    const r = (await s.store.getJob(s.job.id))!.recipients[0]!;
    expect(r.state).toBe("processing");
    const told = s.logs.map((l) => JSON.parse(l) as { level: number; user?: string; err?: string });
    // once for the three passes: a cause that lasts is logged when it starts, not every pass
    expect(told.filter((l) => l.level === 40 && l.user === "carol" && l.err?.includes(LEAVER_NO_ADMIN))).toHaveLength(
      1,
    );
    // the operator sets api.adminKey (a reload): the fax is followed to its end
    s.adminKey.set = true;
    await drain(s);
    expect((await s.store.getJob(s.job.id))!.state).toBe("delivered");
  });
});
