// The console's connector deliveries over HTTP against a whole gateway (issue 52 point 4): the
// fax's page lists its deliveries with why one failed, and "deliver again" is the fax's own user's
// or an operator's: a group member who reads the fax is refused (403). (The gateway's own queue
// takes the row up once it is pending, so what follows is not asserted here: see test/connectors.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listDeliveries, queueDeliveries } from "../../src/store/sql/deliveries.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { receivedInput } from "../helpers/store.js";
import { consoleGateway, PASSWORDS, signIn } from "./rig.js";

let rig: TestGateway;
beforeAll(async () => {
  rig = await startGateway(
    consoleGateway({ config: { inbound: { groups: { referrals: { members: ["alice", "bob"] } } } } }),
  );
}, 120_000);
afterAll(() => rig?.stop());

/** A fax of alice's in the referrals inbox, with a WebDAV delivery that failed for good. */
async function faxWithFailedDelivery() {
  const store = rig.gw.store;
  const { fax } = await store.keepReceived(receivedInput({ groups: ["referrals"] }));
  // a target nothing listens on, whose spec the gateway's queue could try: it stays failed or fails again
  const spec = { url: "https://127.0.0.1:9/dav", username: "fax", passwordSecret: "DAV_PASSWORD" };
  await queueDeliveries(store.sql, [
    { faxId: fax.id, kind: "webdav", target: `webdav ${spec.url}`, spec, rule: "lab results", owner: "alice" },
  ]);
  const [row] = await listDeliveries(store.sql, { faxId: fax.id });
  await store.sql.run("UPDATE deliveries SET state = 'failed', attempts = 8, last_error = ? WHERE id = ?", [
    "401 from the WebDAV server",
    row!.id,
  ]);
  return { faxId: fax.id, deliveryId: row!.id };
}

async function as(user: keyof typeof PASSWORDS) {
  const base = rig.url("web");
  const s = await signIn(base, user, PASSWORDS[user]);
  const headers = { cookie: s.cookie, "x-csrf-token": s.csrf };
  return {
    get: (p: string) => fetch(`${base}${p}`, { headers }),
    post: (p: string) => fetch(`${base}${p}`, { method: "POST", headers }),
  };
}

describe("deliver again in the console", () => {
  it("the fax's page names the failure; bob (a reader) is refused, alice sends it again once", async () => {
    const { faxId, deliveryId } = await faxWithFailedDelivery();
    const alice = await as("alice");
    const page = (await (await alice.get(`/api/received/${faxId}`)).json()) as {
      deliveries: { id: string; state: string; lastError: string; canRetry: boolean }[];
    };
    expect(page.deliveries).toEqual([
      expect.objectContaining({
        id: deliveryId,
        state: "failed",
        lastError: "401 from the WebDAV server",
        canRetry: true,
      }),
    ]);

    const bob = await as("bob");
    const bobPage = (await (await bob.get(`/api/received/${faxId}`)).json()) as { deliveries: { canRetry: boolean }[] };
    expect(bobPage.deliveries[0]!.canRetry).toBe(false);
    const refused = await bob.post(`/api/received/${faxId}/deliveries/${deliveryId}/again`);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: "only the fax's own user or an operator may deliver it again" });

    const again = await alice.post(`/api/received/${faxId}/deliveries/${deliveryId}/again`);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ id: deliveryId, state: "pending" });
  });

  it("an operator may send it again", async () => {
    const { faxId, deliveryId } = await faxWithFailedDelivery();
    const ops = await as("ops");
    const again = await ops.post(`/api/received/${faxId}/deliveries/${deliveryId}/again`);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { state: string }).state).toBe("pending");
  });
});
