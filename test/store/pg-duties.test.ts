// Duties on PostgreSQL: of two gateways on one queue, only the holder of the inbound duty polls
// the service for received faxes (each period it checks it still holds it); when the holder dies,
// the other takes the duty on its next period and the faxes received meanwhile are kept and mailed
// once. Real emulator over HTTPS, the real intake behind each poller, real PostgreSQL.
import path from "node:path";
import { PDFDocument } from "@cantoo/pdf-lib";
import { describe, expect, it } from "vitest";
import type { FaxApi } from "../../src/fax/types.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import { Rig } from "../notify/rig.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("PostgreSQL duty tests");

async function pdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.addPage([612, 792]).drawText("received", { x: 50, y: 700 });
  return doc.save();
}

describe.skipIf(postgres.missing !== null)("duties on PostgreSQL", () => {
  it("only the duty holder polls inbound faxes; the duty moves when the holder dies; each fax mailed once", async () => {
    const rig = await new Rig().start();
    const url = await postgres.database();
    const a = await PgStore.open({ url, dataDir: path.join(rig.dir, "a") });
    const b = await PgStore.open({ url, dataDir: path.join(rig.dir, "b") });
    const calls = { a: 0, b: 0 };
    const counted =
      (who: "a" | "b") =>
      (user: string): FaxApi => {
        const api = rig.clientFor(user);
        return new Proxy(api, {
          get: (t, p, r) => {
            const v = Reflect.get(t, p, r);
            return typeof v === "function"
              ? (...args: unknown[]) => (calls[who]++, (v as (...x: unknown[]) => unknown).apply(t, args))
              : v;
          },
        });
      };
    // each gateway's poller hands what it finds to its own intake, whose service calls count too
    const poller = (store: PgStore, who: "a" | "b") =>
      rig.poller(store, { clientFor: counted(who), logger: rig.logger.child({ component: `inbound-${who}` }) });
    const pa = poller(a, "a");
    const pb = poller(b, "b");
    try {
      await pa.runOnce(); // a takes the duty; the first look sets the cursor
      expect(calls.a).toBeGreaterThan(0);
      const first = await rig.inbound("alice@example.com", "+15557654321", await pdf());
      await pb.runOnce();
      expect(calls.b).toBe(0); // not b's duty: no call to the service at all
      expect(await b.listNotifications({ kind: "inbound" })).toHaveLength(0);
      await pa.runOnce();
      expect((await a.listNotifications({ kind: "inbound" })).map((n) => n.dedupeKey)).toEqual([`inbound:${first}`]);
      expect((await a.listReceived()).map((f) => [f.messageId, f.user])).toEqual([[first, "alice"]]);
      // a dies (its connection ends); a fax arrives meanwhile; b's next period takes over
      await pa.stop();
      await a.close();
      const second = await rig.inbound("alice@example.com", "+15557654321", await pdf());
      await pb.runOnce();
      expect(calls.b).toBeGreaterThan(0);
      expect((await b.listNotifications({ kind: "inbound" })).map((n) => n.dedupeKey).sort()).toEqual(
        [`inbound:${first}`, `inbound:${second}`].sort(),
      );
      // kept once each, on the one queue both gateways share
      expect((await b.listReceived()).map((f) => f.messageId).sort()).toEqual([first, second].sort());
    } finally {
      await pb.stop();
      await pa.stop();
      await a.close();
      await b.close();
      await rig.stop();
    }
  });
});
