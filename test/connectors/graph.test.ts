// Microsoft Graph delivery against a Graph peer over real HTTPS (helpers/graph-server.ts): a
// client-credentials token with the secret from the secrets file, the PDF and its sidecar PUT by
// path with conflictBehavior=fail (a name in use is passed over, never replaced), an upload
// session in 320 KiB multiples over 4 MB, a try after a crash finding its own sidecar, the
// {matter} rule over the OCR text, a wrong secret and a foreign upload host named.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { graphServer, type GraphPeer } from "../helpers/graph-server.js";
import { manualClock, type TempStore, tempStore, TEST_PDF } from "../helpers/store.js";
import { caFileIn } from "../helpers/tls-cert.js";
import { deliveryQueue, keptFax, parseDelivery, queueFor, rowOf, secretsFile } from "./fixtures.js";

const CLIENT = { id: "11111111-2222-3333-4444-555555555555", secret: "graph-client-secret" };
let peer: GraphPeer;
beforeAll(async () => {
  peer = await graphServer(CLIENT);
}, 60_000);
afterAll(() => peer.close());

let t: TempStore | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

async function setup(over: Record<string, unknown> = {}, secret = CLIENT.secret) {
  const clock = manualClock(Date.parse("2026-03-02T10:00:00Z"));
  t = tempStore({ clock });
  const drive = `b!${Math.random().toString(36).slice(2, 10)}`;
  const delivery = parseDelivery({
    graph: {
      tenant: "contoso.onmicrosoft.com",
      clientId: CLIENT.id,
      clientSecret: "GRAPH_SECRET",
      drive,
      graphUrl: peer.graphUrl,
      tokenUrl: peer.tokenUrl("contoso.onmicrosoft.com"),
      caFile: await caFileIn(t.dir),
      ...over,
    },
  });
  const queue = deliveryQueue(t.store, clock, secretsFile(t.dir, { GRAPH_SECRET: secret }));
  const list = () =>
    [...peer.files.keys()]
      .filter((k) => k.startsWith(`${drive}/`))
      .map((k) => k.slice(drive.length + 1))
      .sort();
  return { store: t.store, delivery, queue, drive, list };
}

describe("Microsoft Graph delivery", () => {
  it("PUTs the PDF and its sidecar by path, passing over a name in use without replacing it", async () => {
    const { store, delivery, queue, drive, list } = await setup({ path: "Faxes/{date}/{csid}_{time}.pdf" });
    peer.files.set(`${drive}/Faxes/2026-03-02/CLINIC_LAB_095800.pdf`, Buffer.from("not ours"));
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(list()).toEqual([
      "Faxes/2026-03-02/CLINIC_LAB_095800-2.json",
      "Faxes/2026-03-02/CLINIC_LAB_095800-2.pdf",
      "Faxes/2026-03-02/CLINIC_LAB_095800.pdf",
    ]);
    expect(peer.files.get(`${drive}/Faxes/2026-03-02/CLINIC_LAB_095800.pdf`)!.toString()).toBe("not ours");
    expect(peer.files.get(`${drive}/Faxes/2026-03-02/CLINIC_LAB_095800-2.pdf`)!.equals(TEST_PDF)).toBe(true);
    const side = JSON.parse(peer.files.get(`${drive}/Faxes/2026-03-02/CLINIC_LAB_095800-2.json`)!.toString());
    expect(side).toMatchObject({ id: faxId, csid: "CLINIC LAB", file: "CLINIC_LAB_095800-2.pdf", unsorted: null });
    expect((await rowOf(store, faxId)).result).toBe(`drive ${drive}:/Faxes/2026-03-02/CLINIC_LAB_095800-2.pdf`);
  });

  it("a PUT that would replace a file is refused by conflictBehavior=fail (409), not overwritten", async () => {
    const { store, delivery, queue, drive } = await setup({ path: "{sender}.pdf" });
    const faxId = await keptFax(store);
    // taken between the connector's look and its PUT: only the 409 keeps the file
    const before = peer.calls.length;
    const taken = `${drive}/+15559990000.pdf`;
    const orig = peer.files.has.bind(peer.files);
    let raced = false;
    peer.files.has = (k: string) => {
      if (
        k === taken &&
        !raced &&
        peer.calls.at(-1)?.startsWith("PUT content") &&
        peer.calls.at(-1)?.endsWith(".pdf")
      ) {
        raced = true;
        peer.files.set(taken, Buffer.from("someone else's"));
      }
      return orig(k);
    };
    try {
      await queueFor(store, faxId, delivery);
      expect(await queue.runOnce()).toMatchObject({ delivered: 1 });
    } finally {
      peer.files.has = orig;
    }
    expect(raced).toBe(true);
    expect(peer.files.get(taken)!.toString()).toBe("someone else's");
    expect(peer.files.get(`${drive}/+15559990000-2.pdf`)!.equals(TEST_PDF)).toBe(true);
    expect(peer.calls.slice(before).filter((c) => c.startsWith("PUT content"))).toHaveLength(4);
  });

  it("a file over 4 MB goes through an upload session in 320 KiB multiples", async () => {
    const { store, delivery, queue, drive } = await setup({ path: "big.pdf" });
    const big = Buffer.concat([TEST_PDF, Buffer.alloc(5 * 1024 * 1024 - TEST_PDF.length, 0x20)]);
    const faxId = await keptFax(store, { document: big });
    const before = peer.calls.length;
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toMatchObject({ delivered: 1 });
    expect(peer.files.get(`${drive}/big.pdf`)!.equals(big)).toBe(true);
    const asked = peer.calls.slice(before);
    expect(asked).toContain(`POST createUploadSession ${drive}/big.pdf`);
    expect(asked.filter((c) => c.startsWith("fragment"))).toEqual([
      "fragment 0-3276799/5242880",
      "fragment 3276800-5242879/5242880",
    ]);
  });

  it("a try after a crash finds its own sidecar (read through the download URL) and writes no second", async () => {
    const { store, delivery, queue, list } = await setup();
    const faxId = await keptFax(store);
    const row = await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toMatchObject({ delivered: 1 });
    const files = list();
    await store.sql.run("UPDATE deliveries SET state = 'pending' WHERE id = ?", [row.id]);
    expect(await queue.runOnce()).toMatchObject({ delivered: 1 });
    expect(list()).toEqual(files);
    expect(files).toHaveLength(2);
  });

  it("{matter} comes from the fax's OCR text; none or two go to the unsorted folder", async () => {
    const { store, delivery, queue, list } = await setup({
      path: "Matters/{matter}/{date}_{sender}.pdf",
      matter: { pattern: "Matter No\\.? ?(\\d{4}-\\d+)" },
    });
    const ids = [
      await keptFax(store),
      await keptFax(store, { text: "Matter No. 2024-17 and Matter No 2023-5" }),
      await keptFax(store, { text: "re Matter No. 2024-17" }),
    ];
    for (const id of ids) await queueFor(store, id, delivery);
    expect(await queue.runOnce()).toMatchObject({ delivered: 3 });
    expect(list().filter((f) => f.startsWith("Matters/2024-17/"))).toHaveLength(2);
    expect(list().filter((f) => f.startsWith("Unsorted/"))).toHaveLength(4);
  });

  it("a wrong client secret fails for good with the token endpoint's status, nothing written", async () => {
    const { store, delivery, queue, list } = await setup({}, "wrong");
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toMatchObject({ failed: 1 });
    expect((await rowOf(store, faxId)).lastError).toBe("401 from the Microsoft Graph token endpoint");
    expect(list()).toEqual([]);
  });

  it("an upload URL on a host it was not told of is refused", async () => {
    const { store, delivery, queue, list } = await setup({
      path: "big.pdf",
      graphUrl: peer.graphUrl.replace("127.0.0.1", "localhost"),
    });
    const faxId = await keptFax(store, { document: Buffer.alloc(5 * 1024 * 1024, 0x20) });
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toMatchObject({ failed: 1 });
    expect((await rowOf(store, faxId)).lastError).toBe(
      "Microsoft Graph handed out a URL on another host (127.0.0.1): refused; add it to fileHosts",
    );
    // the sidecar claims the name first; the PDF itself never left for the foreign host
    expect(list()).toEqual(["big.json"]);
  });
});
