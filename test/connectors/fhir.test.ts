// FHIR R4 delivery against a FHIR server that validates every resource against the R4 definitions
// and honours conditional create, over HTTPS trusted only through the connector's caFile: the
// DocumentReference as an EHR's work queue expects it (no subject), a 503 then a retry making no
// second document (also when the first was stored and its answer lost), SMART backend services
// with a signed JWT, a Binary over the inline size, a redirect and an untrusted certificate
// refused, and a final failure on the fax's timeline with its owner alerted.
import { exportJWK, generateKeyPair, exportPKCS8 } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DELIVERY_RETRY_MS } from "../../src/connectors/queue.js";
import { listDeliveries } from "../../src/store/sql/deliveries.js";
import { type FhirServer, startFhirServer } from "../helpers/fhir-server.js";
import { manualClock, type TempStore, tempStore } from "../helpers/store.js";
import { testLedger } from "../helpers/ledger.js";
import { caFileIn } from "../helpers/tls-cert.js";
import { deliveryQueue, keptFax, parseDelivery, queueFor, rowOf, secretsFile } from "./fixtures.js";

let fhir: FhirServer;
beforeAll(async () => {
  fhir = await startFhirServer();
  fhir.acceptToken("bearer-token-1");
}, 120_000);
afterAll(() => fhir?.close());

let t: TempStore | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
  fhir.failNext(200, 0);
  fhir.redirectTo(null);
});

async function setup(over: Record<string, unknown> = {}, secrets: Record<string, string> = {}) {
  // the wall clock's time: the token endpoint checks the JWT's times against its own
  const clock = manualClock(Date.now());
  t = tempStore({ clock });
  const ca = await caFileIn(t.dir);
  const delivery = parseDelivery({
    fhir: { base: fhir.base, auth: { bearer: { tokenSecret: "EHR_TOKEN" } }, caFile: ca, ...over },
  });
  const queue = deliveryQueue(t.store, clock, secretsFile(t.dir, { EHR_TOKEN: "bearer-token-1", ...secrets }));
  return { clock, store: t.store, delivery, queue, ca };
}

const docsOf = (messageId: string) =>
  fhir.documents.filter((d) => (d.identifier as Array<{ value: string }>).some((i) => i.value === messageId));

describe("FHIR R4 delivery", () => {
  it("posts a valid unassigned DocumentReference with the fax's identifiers, once", async () => {
    const { store, delivery, queue } = await setup();
    const faxId = await keptFax(store);
    const fax = (await store.getReceived(faxId))!;
    await queueFor(store, faxId, delivery);
    const pass = await queue.runOnce();
    expect(pass).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(fhir.invalid).toEqual([]);
    const [doc] = docsOf(fax.messageId);
    expect(doc).toMatchObject({
      resourceType: "DocumentReference",
      status: "current",
      type: { coding: [{ system: "http://loinc.org", code: "34109-9" }] },
      date: fax.receivedAt,
      context: { period: { start: fax.receivedAt } },
    });
    expect(doc!.subject).toBeUndefined();
    const ids = doc!.identifier as Array<{ system: string; value: string }>;
    expect(ids.map((i) => i.system)).toEqual([
      "urn:faxgate:fax:message-id",
      "urn:faxgate:fax:message-id:sender",
      "urn:faxgate:fax:message-id:csid",
    ]);
    expect(ids[2]!.value).toBe("CLINIC LAB");
    const att = (doc!.content as Array<{ attachment: { data: string; contentType: string } }>)[0]!.attachment;
    expect(att.contentType).toBe("application/pdf");
    expect(Buffer.from(att.data, "base64").subarray(0, 5).toString()).toBe("%PDF-");
    const post = fhir.log.find((l) => l.method === "POST" && l.path.endsWith("/DocumentReference"))!;
    expect(post.headers["if-none-exist"]).toBe(
      `identifier=${encodeURIComponent(`urn:faxgate:fax:message-id|${fax.messageId}`)}`,
    );
    const row = await rowOf(store, faxId);
    expect(row).toMatchObject({ state: "delivered", attempts: 1, result: `DocumentReference/${doc!.id}` });
    const events = await store.listReceivedEvents(faxId);
    expect(events.at(-1)).toMatchObject({ action: "delivered" });
    expect(events.at(-1)!.detail).toContain(`DocumentReference/${doc!.id}`);
    const ledger = await testLedger(store).rows({ object: { kind: "received", id: faxId } });
    expect(ledger.map((r) => r.action)).toEqual(["delivered"]);
    // a second pass has nothing to do
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 0, failed: 0 });
  });

  it("after a 503 tries again later and makes no second document, even when the first was stored", async () => {
    const { clock, store, delivery, queue } = await setup();
    const faxId = await keptFax(store);
    const fax = (await store.getReceived(faxId))!;
    await queueFor(store, faxId, delivery);
    fhir.storeThenFail();
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 1, failed: 0 });
    let row = await rowOf(store, faxId);
    expect(row).toMatchObject({ state: "pending", attempts: 1, lastError: "503 from the FHIR server" });
    expect(docsOf(fax.messageId)).toHaveLength(1);
    // not due yet
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 0, failed: 0 });
    clock.advance(DELIVERY_RETRY_MS[0]! * 1.2);
    fhir.failNext(503);
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 1, failed: 0 });
    clock.advance(DELIVERY_RETRY_MS[1]! * 1.2);
    expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
    row = await rowOf(store, faxId);
    expect(row).toMatchObject({ state: "delivered", attempts: 3 });
    expect(docsOf(fax.messageId)).toHaveLength(1);
    expect(row.result).toBe(`DocumentReference/${docsOf(fax.messageId)[0]!.id}`);
  });

  it("gets a token with a signed JWT (SMART backend services) and sends the PDF as a Binary over the size", async () => {
    const { privateKey, publicKey } = await generateKeyPair("RS384", { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS384" };
    fhir.smartClient("faxgate-client", { keys: [jwk] });
    const before = fhir.tokensIssued;
    const { store, queue } = await setup({}, { EHR_KEY: await exportPKCS8(privateKey) });
    const delivery = parseDelivery({
      fhir: {
        base: fhir.base,
        auth: { smart: { tokenUrl: fhir.tokenUrl, clientId: "faxgate-client", keySecret: "EHR_KEY", keyId: "k1" } },
        caFile: await caFileIn(t!.dir),
        inlineMaxBytes: 100,
      },
    });
    const a = await keptFax(store);
    const b = await keptFax(store);
    await queueFor(store, a, delivery);
    await queueFor(store, b, delivery);
    const pass = await queue.runOnce();
    expect([pass, (await rowOf(store, a)).lastError, fhir.invalid]).toEqual([
      { delivered: 2, retried: 0, failed: 0 },
      null,
      [],
    ]);
    // one token for both
    expect(fhir.tokensIssued - before).toBe(1);
    expect(fhir.invalid).toEqual([]);
    const fax = (await store.getReceived(a))!;
    const att = (docsOf(fax.messageId)[0]!.content as Array<{ attachment: { url: string; data?: string } }>)[0]!
      .attachment;
    expect(att.data).toBeUndefined();
    expect(att.url).toMatch(/^Binary\/faxgate-FR/);
    expect(fhir.binaries.get(att.url.slice("Binary/".length))).toMatchObject({ contentType: "application/pdf" });
  });

  it("a wrong SMART key fails for good: on the fax's timeline and in an alert to its owner", async () => {
    const { privateKey } = await generateKeyPair("RS384", { extractable: true });
    const { store, queue } = await setup({}, { EHR_KEY: await exportPKCS8(privateKey) });
    const delivery = parseDelivery({
      fhir: {
        base: fhir.base,
        auth: { smart: { tokenUrl: fhir.tokenUrl, clientId: "faxgate-client", keySecret: "EHR_KEY" } },
        caFile: await caFileIn(t!.dir),
      },
    });
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 0, failed: 1 });
    const row = await rowOf(store, faxId);
    expect(row.state).toBe("failed");
    expect(row.lastError).toBe("the token endpoint: 401 from the FHIR server");
    const events = await store.listReceivedEvents(faxId);
    expect(events.at(-1)).toMatchObject({ action: "not-delivered" });
    expect(events.at(-1)!.detail).toContain("not delivered to the EHR (FHIR)");
    const alerts = (await store.claimNotifications("t", 10, 60_000)).filter((n) => n.kind === "alert");
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.user).toBe("alice");
    const text = JSON.stringify(alerts[0]!.payload);
    expect(text).toContain("401");
    expect(text).not.toContain("+1555");
  });

  it("a 401 for a bearer token fails at once, names the reason, and 'deliver again' brings it back", async () => {
    const { store, delivery, queue } = await setup({}, { EHR_TOKEN: "not-accepted" });
    const faxId = await keptFax(store);
    const row = await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 0, failed: 1 });
    expect((await rowOf(store, faxId)).lastError).toBe("401 from the FHIR server");
    fhir.acceptToken("not-accepted");
    const { deliverAgain } = await import("../../src/store/sql/deliveries.js");
    expect(await deliverAgain(store.sql, row.id, "ops")).toMatchObject({ state: "pending", attempts: 0 });
    expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
  });

  it("refuses a redirect and an untrusted certificate, naming each", async () => {
    const { store, delivery, queue } = await setup();
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    fhir.redirectTo("https://127.0.0.2:1");
    expect(await queue.runOnce()).toMatchObject({ failed: 1 });
    expect((await rowOf(store, faxId)).lastError).toMatch(/^307 from the FHIR server: a redirect, refused/);
    fhir.redirectTo(null);
    const noCa = parseDelivery({ fhir: { base: fhir.base, auth: { bearer: { tokenSecret: "EHR_TOKEN" } } } });
    const other = await keptFax(store);
    await queueFor(store, other, noCa);
    expect(await queue.runOnce()).toMatchObject({ failed: 1 });
    expect((await rowOf(store, other)).lastError).toMatch(/certificate is not trusted .*caFile/);
  });

  it("one FHIR server down holds only its own deliveries", async () => {
    const { store, delivery, queue, ca } = await setup();
    const down = parseDelivery({
      fhir: { base: "https://127.0.0.1:9/fhir", auth: { bearer: { tokenSecret: "EHR_TOKEN" } }, caFile: ca },
    });
    const ids = [await keptFax(store), await keptFax(store), await keptFax(store)];
    for (const id of ids) {
      await queueFor(store, id, down);
      await queueFor(store, id, delivery);
    }
    expect(await queue.runOnce()).toEqual({ delivered: 3, retried: 3, failed: 0 });
    const rows = await listDeliveries(store.sql, { state: "pending" });
    expect(rows).toHaveLength(3);
    // only the first was tried; the other two were put back untried
    expect(rows.map((r) => r.attempts).sort()).toEqual([0, 0, 1]);
    expect(rows.every((r) => /could not be reached/.test(r.lastError ?? ""))).toBe(true);
  });
});
