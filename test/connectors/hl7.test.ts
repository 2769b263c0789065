// HL7 v2 delivery over MLLP against node-hl7-server: an MDM^T02 with the PDF as encapsulated data
// (OBX ED, base64) delivered on an ACK (AA); a NAK (AE) and silence are tried again later with the
// same message control id, so the receiver can drop a message it has already taken.
import { Server } from "node-hl7-server";
import type { Inbound } from "node-hl7-server";
import { afterEach, describe, expect, it } from "vitest";
import { DELIVERY_RETRY_MS } from "../../src/connectors/queue.js";
import { freePort } from "../helpers/net.js";
import { manualClock, type TempStore, tempStore } from "../helpers/store.js";
import { deliveryQueue, keptFax, parseDelivery, queueFor, rowOf } from "./fixtures.js";

type Reply = "AA" | "AE" | "AR" | "silence";

interface Taken {
  controlId: string;
  type: string;
  obx: string;
}

async function mllpPeer(replies: Reply[]): Promise<{ port: number; taken: Taken[]; close: () => Promise<unknown> }> {
  const port = await freePort();
  const taken: Taken[] = [];
  const server = new Server({ bindAddress: "127.0.0.1" });
  const inbound: Inbound = server.createInbound({ port }, async (req, res) => {
    const m = req.getMessage();
    taken.push({
      controlId: m.get("MSH.10").toString(),
      type: `${m.get("MSH.9.1").toString()}^${m.get("MSH.9.2").toString()}`,
      obx: m.get("OBX.5").toString() + "|" + m.get("OBX.2").toString() + "|" + m.get("OBX.5.5").toString(),
    });
    const reply = replies.shift() ?? "AA";
    if (reply !== "silence") await res.sendResponse(reply);
  });
  await new Promise<void>((resolve) => inbound.once("listen", () => resolve()));
  return { port, taken, close: () => inbound.close() };
}

let t: TempStore | null = null;
let peer: Awaited<ReturnType<typeof mllpPeer>> | null = null;
afterEach(async () => {
  await peer?.close();
  peer = null;
  t?.cleanup();
  t = null;
});

function setup(port: number) {
  const clock = manualClock(Date.parse("2026-03-02T10:00:00Z"));
  t = tempStore({ clock });
  const delivery = parseDelivery({
    hl7: { host: "127.0.0.1", port, receivingApplication: "EHR", receivingFacility: "CLINIC", ackTimeout: "1s" },
  });
  return { clock, store: t.store, delivery, queue: deliveryQueue(t.store, clock, null) };
}

describe("HL7 v2 delivery over MLLP", () => {
  it("sends an MDM^T02 with the PDF in an ED OBX and is delivered on the ACK", async () => {
    peer = await mllpPeer(["AA"]);
    const { store, delivery, queue } = setup(peer.port);
    const faxId = await keptFax(store);
    const row = await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(peer.taken).toHaveLength(1);
    expect(peer.taken[0]!.type).toBe("MDM^T02");
    expect(peer.taken[0]!.controlId).toBe(row.id);
    const [, type, data] = peer.taken[0]!.obx.split("|");
    expect(type).toBe("ED");
    expect(Buffer.from(data!, "base64").subarray(0, 5).toString()).toBe("%PDF-");
    expect((await rowOf(store, faxId)).state).toBe("delivered");
  });

  it("a NAK and then silence are tried again with the same control id, then the ACK delivers", async () => {
    peer = await mllpPeer(["AE", "silence", "AA"]);
    const { clock, store, delivery, queue } = setup(peer.port);
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 1, failed: 0 });
    expect((await rowOf(store, faxId)).lastError).toBe("a NAK (AE) from the HL7 interface");
    clock.advance(DELIVERY_RETRY_MS[0]! * 1.2);
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 1, failed: 0 });
    expect((await rowOf(store, faxId)).lastError).toBe("no ACK from the HL7 interface within 1s");
    clock.advance(DELIVERY_RETRY_MS[1]! * 1.2);
    expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(peer.taken).toHaveLength(3);
    expect(new Set(peer.taken.map((m) => m.controlId)).size).toBe(1);
    expect(await rowOf(store, faxId)).toMatchObject({ state: "delivered", attempts: 3 });
  });

  it("a peer that is not listening is a passing problem, named", async () => {
    const port = await freePort();
    const { store, delivery, queue } = setup(port);
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 1, failed: 0 });
    expect((await rowOf(store, faxId)).lastError).toMatch(/HL7 interface/);
  });
});
