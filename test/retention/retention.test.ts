// The retention rule against the emulator over real HTTPS, with a fake clock: a sent fax past its
// time goes here and at the service (DELETE, then isFilePurged read back), each copy with its
// ledger row; a held one stays at both; a service that ignores the delete is tried again and
// raises an alert; a refused delete too; outbox mails past their time go.
import { mkdirSync, utimesSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type RetentionConfig, retentionSchema } from "../../src/config/retention.js";
import type { FaxClient } from "../../src/fax/client.js";
import { silentLogger } from "../../src/log/index.js";
import { LegalHolds } from "../../src/retention/legal-holds.js";
import { ALERT_AFTER_TRIES, Retention, SERVICE_RETRY_MS } from "../../src/retention/retention.js";
import { listServicePurges } from "../../src/store/sql/retention.js";
import { clientFor, closeClients, emulatorCall } from "../helpers/client.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { manualClock, tempStore, type TempStore } from "../helpers/store.js";
import { testLedger } from "../helpers/ledger.js";
import { finishedJob } from "./fixtures.js";

const DAY = 86_400_000;
let emu: TestEmulator;
let admin: FaxClient;
let alice: FaxClient;
beforeAll(async () => {
  emu = await startTestEmulator();
  admin = clientFor(emu, TEST_KEYS.admin);
  alice = clientFor(emu, TEST_KEYS.alice);
}, 60_000);
afterAll(async () => {
  await closeClients(emu);
  await emu.stop();
});

let t: TempStore | null = null;
afterEach(async () => {
  await emulatorCall(emu, "PUT", "/_emulator/faults", { deleteMode: "normal" });
  t?.cleanup();
  t = null;
});

const send = async (n: string) =>
  (await alice.sendFax({ faxNumber: n, coverPage: true, notes: "retention" })).messageId;
const atService = (id: string) => admin.faxInfo(id);

function setup(rule: Partial<Record<string, unknown>> = {}) {
  const clock = manualClock(Date.parse("2026-01-01T00:00:00Z"));
  t = tempStore({ clock });
  const ledger = testLedger(t.store);
  const outbox = path.join(t.dir, "outbox");
  mkdirSync(outbox);
  const cfg: RetentionConfig = retentionSchema.parse({ sent: "30d", outbox: "10d", ...rule });
  const retention = new Retention({
    store: t.store,
    ledger,
    retention: () => cfg,
    // the service lets an admin key delete any of the account's faxes (a print_driver key may not)
    clientFor: () => admin,
    outboxDir: () => outbox,
    clock,
    logger: silentLogger(),
  });
  return {
    clock,
    ledger,
    retention,
    outbox,
    holds: new LegalHolds({ store: t.store, ledger }),
    store: t.store,
    dir: t.dir,
  };
}

describe("the retention rule at the fax service", () => {
  it("past its time a fax goes here and at the service, checked gone; a held one stays at both", async () => {
    const { clock, ledger, retention, holds, store, dir } = setup();
    const goneId = await send("+15550107001");
    const heldId = await send("+15550107002");
    const gone = await finishedJob(store, dir, goneId);
    const held = await finishedJob(store, dir, heldId, { number: "+15550107002" });
    await holds.add({ kind: "job", value: held, reason: "litigation", by: "ops", door: "cli" });

    clock.advance(29 * DAY);
    expect(await retention.pass()).toMatchObject({ purged: 0, serviceDeleted: 0 });
    expect((await atService(goneId)).isFilePurged).toBe(false);

    clock.advance(2 * DAY);
    expect(await retention.pass()).toMatchObject({ purged: 1, serviceDeleted: 1, serviceFailed: 0 });
    expect(await store.getJob(gone)).toBeNull();
    const record = await atService(goneId);
    expect(record.isFilePurged).toBe(true);
    expect(record.deletedAt).toBeTruthy();
    // held: here and there, however old
    clock.advance(3650 * DAY);
    expect(await retention.pass()).toMatchObject({ purged: 0, serviceDeleted: 0 });
    expect(await store.getJob(held)).not.toBeNull();
    expect(await atService(heldId)).toMatchObject({ isFilePurged: false, deletedAt: null });

    const purged = (await ledger.rows()).filter((e) => e.action === "purged");
    expect(purged.map((e) => [e.object.id, e.detail.copy])).toEqual([
      [gone, "local"],
      [gone, "service"],
    ]);
    expect(purged[1]).toMatchObject({ numberHash: ledger.numberHash("+15551230001"), detail: { messageId: goneId } });
  }, 60_000);

  it("a service copy may go before the local one (retention.service shorter)", async () => {
    const { clock, retention, store, dir } = setup({ service: "1d" });
    const id = await send("+15550107003");
    const job = await finishedJob(store, dir, id);
    clock.advance(2 * DAY);
    expect(await retention.pass()).toMatchObject({ purged: 0, serviceDeleted: 1 });
    expect(await store.getJob(job)).not.toBeNull();
    expect((await atService(id)).isFilePurged).toBe(true);
    clock.advance(30 * DAY);
    // the local copy goes; its service copy is already done, not deleted twice
    expect(await retention.pass()).toMatchObject({ purged: 1, serviceDeleted: 0 });
  }, 60_000);

  for (const mode of ["ignore", "refuse"] as const) {
    it(`a service that does not delete (${mode}) is tried again and raises one alert`, async () => {
      const { clock, ledger, retention, store, dir } = setup();
      const id = await send(mode === "ignore" ? "+15550107004" : "+15550107005");
      const job = await finishedJob(store, dir, id);
      await emulatorCall(emu, "PUT", "/_emulator/faults", { deleteMode: mode });
      clock.advance(31 * DAY);
      expect(await retention.pass()).toMatchObject({ purged: 1, serviceDeleted: 0, serviceFailed: 1 });
      for (let i = 1; i < ALERT_AFTER_TRIES + 2; i++) {
        // not before its next try is due
        expect((await retention.pass()).serviceFailed).toBe(0);
        clock.advance(SERVICE_RETRY_MS[i - 1]!);
        expect((await retention.pass()).serviceFailed).toBe(1);
      }
      const alerts = await store.listNotifications({ kind: "alert" });
      expect(alerts).toHaveLength(1);
      expect((alerts[0]!.payload as { text: string }).text).toContain(job);
      expect((alerts[0]!.payload as { text: string }).text).not.toContain("5550107");
      const [row] = await listServicePurges(store.retentionPort().db);
      expect(row).toMatchObject({ state: "pending", attempts: ALERT_AFTER_TRIES + 2 });
      expect((await ledger.rows()).filter((e) => e.detail.copy === "service")).toEqual([]);
      expect((await atService(id)).isFilePurged).toBe(false);

      // the service mends: the next try takes, with its ledger row
      await emulatorCall(emu, "PUT", "/_emulator/faults", { deleteMode: "normal" });
      clock.advance(SERVICE_RETRY_MS.at(-1)!);
      expect((await retention.pass()).serviceDeleted).toBe(1);
      expect((await atService(id)).isFilePurged).toBe(true);
      expect((await ledger.rows()).filter((e) => e.detail.copy === "service")).toHaveLength(1);
    }, 60_000);
  }

  it("outbox mails past retention.outbox go; newer ones stay", async () => {
    const { clock, retention, outbox } = setup();
    const old = path.join(outbox, "old.eml");
    const fresh = path.join(outbox, "fresh.eml");
    writeFileSync(old, "x");
    writeFileSync(fresh, "x");
    const s = (clock.now() - 11 * DAY) / 1000;
    utimesSync(old, s, s);
    utimesSync(fresh, clock.now() / 1000, clock.now() / 1000);
    expect((await retention.pass()).outboxRemoved).toBe(1);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
  }, 30_000);
});
