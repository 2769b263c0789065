// The emulator's webhooks as the real service is seen to run them: registrations over the API
// (admin key), one POST of the fax record per subscribed event when a fax is final, Basic auth,
// any 2xx counts, else retries on the 5 s, 25 s, 2 min ... schedule (scaled for the test).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, manualClock, type Api } from "../emulator/api.js";
import { startSink, type Sink } from "./receiver-sink.js";
import { receiveFax } from "./rig.js";

const ALL = {
  "fax.v1.outbound.succeed": true,
  "fax.v1.outbound.failed": true,
  "fax.v1.outbound.complete": true,
  "fax.v1.inbound.succeed": true,
  "fax.v1.inbound.failed": true,
  "fax.v1.inbound.complete": true,
};

let emu: TestEmulator | null = null;
let api: Api | null = null;
let sink: Sink | null = null;
afterEach(async () => {
  await api?.close();
  await emu?.stop();
  await sink?.close();
  emu = api = sink = null;
});

async function setup(opts: Parameters<typeof startTestEmulator>[0] = {}, tls?: { key: string; cert: string }) {
  emu = await startTestEmulator({ delayMs: 50, ...opts });
  api = apiFor(emu);
  sink = await startSink(tls);
  return { emu, api, sink };
}

describe("registrations", () => {
  it("POST/GET/PUT/DELETE /webhooks with the admin key; bad fields refused by name", async () => {
    const { api, sink } = await setup();
    const made = await api.call("POST", "/webhooks", TEST_KEYS.admin, {
      name: "gw",
      url: sink.url,
      events: { "fax.v1.outbound.complete": true },
      auth: "faxgate:s3cret-pass",
    });
    expect(made.status, made.text).toBe(200);
    expect(made.json).toMatchObject({
      uuid: expect.any(String),
      name: "gw",
      url: sink.url,
      events: { "fax.v1.outbound.complete": true },
      accountId: emu!.accountId,
      attachmentEnabled: false,
    });
    expect((await api.get("/webhooks", TEST_KEYS.admin)).json).toHaveLength(1);
    const changed = await api.call("PUT", `/webhooks/${made.json.uuid}`, TEST_KEYS.admin, { events: ALL });
    expect(changed.json.events).toEqual(ALL);
    expect(changed.json.name).toBe("gw");
    // a print_driver key may not see or change them
    expect((await api.get("/webhooks", TEST_KEYS.alice)).status).toBe(403);
    for (const [body, word] of [
      [{ name: "x", url: "ftp://example.com", events: ALL }, "url"],
      [{ name: "x", url: sink.url, events: { "fax.v2.everything": true } }, "fax.v2.everything"],
      [{ name: "x", url: sink.url, events: {} }, "events"],
      [{ name: "x", url: sink.url, events: ALL, auth: "no-colon" }, "auth"],
      [{ url: sink.url, events: ALL }, "name"],
      [{ name: "x", url: sink.url, events: ALL, accountId: "another-account" }, "accountId"],
    ] as const) {
      const bad = await api.call("POST", "/webhooks", TEST_KEYS.admin, body);
      expect(bad.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(bad.json.error.message).toContain(word);
    }
    expect((await api.call("DELETE", `/webhooks/${made.json.uuid}`, TEST_KEYS.admin)).status).toBe(204);
    expect((await api.get("/webhooks", TEST_KEYS.admin)).json).toEqual([]);
    expect((await api.call("DELETE", `/webhooks/${made.json.uuid}`, TEST_KEYS.admin)).status).toBe(404);
  });
});

describe("deliveries", () => {
  it("a final fax is POSTed once per subscribed event, as its record without the file, with Basic auth", async () => {
    const { api, sink } = await setup();
    await api.call("POST", "/webhooks", TEST_KEYS.admin, {
      name: "gw",
      url: sink.url,
      events: { "fax.v1.outbound.failed": true, "fax.v1.outbound.complete": true },
      auth: "faxgate:s3cret-pass",
    });
    const ok = (
      await api.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550104444", coverPage: "true", cf: '{"job":"J1"}' }),
      )
    ).json;
    const busy = (
      await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550100000", coverPage: "true" }))
    ).json;
    // delivered: complete only (not subscribed to succeed); busy: failed and complete
    const got = await sink.waitFor(3);
    const of = (id: string) =>
      got
        .filter((r) => r.body.messageId === id)
        .map((r) => r.headers["x-webhook-event"])
        .sort();
    expect(of(ok.messageId)).toEqual(["fax.v1.outbound.complete"]);
    expect(of(busy.messageId)).toEqual(["fax.v1.outbound.complete", "fax.v1.outbound.failed"]);
    const okBody = got.find((r) => r.body.messageId === ok.messageId)!;
    expect(okBody.body).toMatchObject({
      status: "success",
      resultCode: "0",
      resultInfo: "OK",
      direction: "outbound",
      faxNumber: "+15550104444",
      cf: { job: "J1" },
    });
    expect(got.find((r) => r.body.messageId === busy.messageId)!.body).toMatchObject({
      status: "failed",
      resultCode: "6100",
      resultInfo: "Fax Number Busy",
    });
    expect(okBody.headers.authorization).toBe(`Basic ${Buffer.from("faxgate:s3cret-pass").toString("base64")}`);
    expect(okBody.headers["content-type"]).toBe("application/json");
    expect(JSON.stringify(okBody.body)).not.toMatch(/%PDF|attachments/);
    const deliveries = (await api.get("/_emulator/webhook-deliveries", TEST_KEYS.admin)).json;
    expect(
      deliveries.every((d: { state: string; attempts: number }) => d.state === "delivered" && d.attempts === 1),
    ).toBe(true);
  });

  it("an inbound fax raises the inbound events", async () => {
    const { api, sink } = await setup();
    await api.call("POST", "/webhooks", TEST_KEYS.admin, {
      name: "gw",
      url: sink.url,
      events: { "fax.v1.inbound.succeed": true },
    });
    const aliceId = (await api.get("/v1/me", TEST_KEYS.alice)).json.userId;
    const inbound = await receiveFax(api);
    const [r] = await sink.waitFor(1);
    expect(r!.headers["x-webhook-event"]).toBe("fax.v1.inbound.succeed");
    expect(r!.body).toMatchObject({
      messageId: inbound.messageId,
      direction: "inbound",
      status: "success",
      userId: aliceId,
    });
    expect(r!.headers.authorization).toBeUndefined();
  });

  it("a receiver answering 500 gets the event again on the scaled schedule until a 2xx", async () => {
    // scale 0.01: 5 s, 25 s, 2 min become 50 ms, 250 ms, 1.2 s
    const { api, sink } = await setup({ webhookRetryScale: 0.01 });
    sink.answers.push(500, 503, 500);
    await api.call("POST", "/webhooks", TEST_KEYS.admin, {
      name: "gw",
      url: sink.url,
      events: { "fax.v1.outbound.complete": true },
    });
    const fax = (
      await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550104444", coverPage: "true" }))
    ).json;
    const got = await sink.waitFor(4, 15_000);
    expect(got.every((r) => r.body.messageId === fax.messageId)).toBe(true);
    const gaps = got.slice(1).map((r, i) => r.at - got[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(50);
    expect(gaps[1]).toBeGreaterThanOrEqual(250);
    expect(gaps[2]).toBeGreaterThanOrEqual(1200);
    // lower bounds only: load can only lengthen a gap, and the fourth delivery arriving at all
    // (sink.waitFor) shows the schedule goes on
    const deliveries = (await api.get("/_emulator/webhook-deliveries", TEST_KEYS.admin)).json;
    await expect
      .poll(async () => (await api!.get("/_emulator/webhook-deliveries", TEST_KEYS.admin)).json[0].state)
      .toBe("delivered");
    expect(deliveries).toHaveLength(1);
    const final = (await api.get("/_emulator/webhook-deliveries", TEST_KEYS.admin)).json[0];
    expect(final).toMatchObject({ attempts: 4, lastStatus: "200" });
  });

  it("a delivery still pending at a stop is sent after the restart, once", async () => {
    const clock = manualClock();
    const { emu: first, api: firstApi, sink } = await setup({ clock, delayMs: 1000 });
    sink.answers.push(500);
    await firstApi.call("POST", "/webhooks", TEST_KEYS.admin, {
      name: "gw",
      url: sink.url,
      events: { "fax.v1.outbound.complete": true },
    });
    const fax = (
      await firstApi.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550104444", coverPage: "true" }))
    ).json;
    clock.advance(1000);
    await sink.waitFor(1);
    await expect
      .poll(async () => (await firstApi.get("/_emulator/webhook-deliveries", TEST_KEYS.admin)).json[0]?.attempts)
      .toBe(1);
    await firstApi.close();
    await first.close();
    api = null;

    emu = await startTestEmulator({ dataDir: first.dataDir, clock, delayMs: 1000 });
    api = apiFor(emu);
    // the first retry is due 5 s after the failed attempt, whatever happened in between
    clock.advance(5000);
    const got = await sink.waitFor(2);
    expect(got[1]!.body.messageId).toBe(fax.messageId);
    await expect
      .poll(async () => (await api!.get("/_emulator/webhook-deliveries", TEST_KEYS.admin)).json[0]?.state)
      .toBe("delivered");
    expect(sink.requests).toHaveLength(2);
  });

  it("an https receiver is trusted through webhookCa (no insecure switch needed)", async () => {
    // the emulator's own self-signed certificate serves as the receiver's here
    const first = await startTestEmulator();
    const pem = { cert: first.caPem, key: await readFile(path.join(first.dataDir, "key.pem"), "utf8") };
    const { api, sink } = await setup({ webhookCa: first.caPem }, pem);
    await first.stop();
    await api.call("POST", "/webhooks", TEST_KEYS.admin, {
      name: "gw",
      url: sink.url,
      events: { "fax.v1.outbound.complete": true },
    });
    await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550104444", coverPage: "true" }));
    const [r] = await sink.waitFor(1);
    expect(r!.body.status).toBe("success");
  });
});
