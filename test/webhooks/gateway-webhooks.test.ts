// Webhooks end to end: the emulator (a real HTTPS service model) pushes results to the gateway's
// receiver, which applies them through the dispatcher's own result path. Polling is set to an hour,
// so only the webhook can deliver the result in these tests.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import type { Gateway } from "../../src/main.js";
import type { WebhookOutcome } from "../../src/webhooks/receiver.js";
import { runCli } from "../helpers/cli.js";
import { startTestEmulator, TEST_KEYS } from "../helpers/emulator.js";
import { newJob } from "../helpers/store.js";
import { apiFor } from "../emulator/api.js";
import { nextEvent } from "../helpers/wait.js";
import { PASSWORD, receiveFax, startWebhookRig, type WebhookRig } from "./rig.js";
import { tempFolder } from "../tmp-dir.js";

let rig: WebhookRig | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

async function start(): Promise<WebhookRig> {
  rig = await startWebhookRig({ delayMs: 200 });
  // the service posts to our receiver (the configured public URL would be a proxy in front of it)
  const made = await rig.api.call("POST", "/webhooks", TEST_KEYS.admin, {
    name: "faxgate",
    url: rig.hookUrl,
    auth: `faxgate:${PASSWORD}`,
    events: { "fax.v1.outbound.complete": true, "fax.v1.inbound.complete": true },
  });
  expect(made.status, made.text).toBe(200);
  return rig;
}

/** The receiver's next event that `pred` accepts (fails, naming what was awaited, after 20 s). */
const nextApplied = async (gw: Gateway, pred: (o: WebhookOutcome) => boolean): Promise<WebhookOutcome> => {
  const [o] = await nextEvent(gw.webhooks!, "event", "a matching webhook event", (o) => pred(o as WebhookOutcome));
  return o as WebhookOutcome;
};

describe("the webhook receiver", () => {
  it("applies a pushed result with no polling (the poller looks an hour away)", async () => {
    const { gw, api } = await start();
    const applied = nextApplied(gw, (o) => o.applied && o.direction === "outbound");
    const { job } = await gw.store.enqueue(
      newJob(rig!.dir, { recipients: [{ number: "+15550104444" }, { number: "+15550100000" }] }),
    );
    // the queue and the result poller look an hour away: a result applied at all was pushed
    // (the push is a hint, checked with one call for the fax's own record)
    const first = await applied;
    const info = (await api.get(`/v1/fax/${first.messageId}/info`, TEST_KEYS.alice)).json;
    expect(info.resolvedDate).toBeTruthy();
    // both results arrive by webhook and leave processing the way a polled result would
    await expect
      .poll(
        async () =>
          (await gw.store.getJob(job.id))!.recipients.every(
            (r) => r.state !== "processing" && r.state !== "sending" && r.state !== "queued",
          ),
        { timeout: 5000 },
      )
      .toBe(true);
    const recipients = (await gw.store.getJob(job.id))!.recipients;
    expect(recipients.find((r) => r.number.endsWith("4444"))).toMatchObject({
      state: "delivered",
      resultCode: "0",
      resultInfo: "OK",
    });
    // 6100 "Fax Number Busy" is a busy line: applied as another try later, up to queue.maxFaxTries
    expect(recipients.find((r) => r.number.endsWith("0000"))).toMatchObject({ state: "deferred", lastError: "busy" });
    const deliveries = (await api.get("/_emulator/webhook-deliveries", TEST_KEYS.admin)).json;
    expect(deliveries.map((d: { state: string }) => d.state)).toEqual(["delivered", "delivered"]);
  });

  it("refuses wrong or missing credentials with 401, applies nothing, and never logs the secret", async () => {
    const { gw, port } = await start();
    const url = `http://127.0.0.1:${port}/faxgate/events`;
    const body = JSON.stringify({ messageId: "m-1", direction: "outbound", status: "success", resultCode: "0" });
    const refused: unknown[] = [];
    gw.webhooks!.on("refused", (r) => refused.push(r));
    const events: unknown[] = [];
    gw.webhooks!.on("event", (e) => events.push(e));
    for (const auth of [
      `Basic ${Buffer.from("faxgate:wrong-password-123").toString("base64")}`,
      `Basic ${Buffer.from(`other:${PASSWORD}`).toString("base64")}`,
      undefined,
      "Bearer x",
    ]) {
      const r = await request(url, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
      });
      expect(r.statusCode).toBe(401);
      expect(r.headers["www-authenticate"]).toMatch(/^Basic/);
      await r.body.dump();
    }
    expect(refused).toHaveLength(4);
    expect(events).toHaveLength(0);
    // the right credentials are taken (an unknown fax is acknowledged, not applied)
    const ok = await request(url, {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        authorization: `Basic ${Buffer.from(`faxgate:${PASSWORD}`).toString("base64")}`,
      },
    });
    expect(ok.statusCode).toBe(200);
    await ok.body.dump();
    expect(events).toEqual([expect.objectContaining({ messageId: "m-1", applied: false })]);
    // a body that is not a fax record is refused by name
    const bad = await request(url, {
      method: "POST",
      body: '{"hello":1}',
      headers: {
        "content-type": "application/json",
        authorization: `Basic ${Buffer.from(`faxgate:${PASSWORD}`).toString("base64")}`,
      },
    });
    expect(bad.statusCode).toBe(400);
    expect(await bad.body.text()).toContain("messageId");
    const all = rig!.logs.join("");
    expect(all).toContain("webhook refused");
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain("wrong-password-123");
  });

  it("an inbound fax pushed by the service is queued for its user at once", async () => {
    const { gw, api } = await start();
    const got = nextApplied(gw, (o) => o.direction === "inbound");
    const inbound = await receiveFax(api);
    expect(await got).toMatchObject({ messageId: inbound.messageId, applied: true });
    const queued = await gw.store.listNotifications({ kind: "inbound" });
    expect(queued.map((n) => ({ user: n.user, key: n.dedupeKey }))).toEqual([
      { user: "alice", key: `inbound:${inbound.messageId}` },
    ]);
  });
});

describe("faxgate webhooks register|list|remove", () => {
  it("registers the configured receiver for the six events, lists it without the password, removes it", async () => {
    const emu = await startTestEmulator();
    const api = apiFor(emu);
    const dir = tempFolder("whcli");
    try {
      const file = path.join(dir, "faxgate.yaml");
      writeFileSync(
        file,
        [
          "api:",
          `  baseUrl: ${emu.baseUrl}`,
          `  caFile: ${emu.caFile}`,
          `  adminKey: ${TEST_KEYS.admin}`,
          `data: ${path.join(dir, "data")}`,
          "users:",
          `  - { name: alice, email: alice@example.com, apiKey: ${TEST_KEYS.alice} }`,
          "webhooks:",
          "  listen: 127.0.0.1:8089",
          "  url: https://fax.example.com/faxgate/events",
          "  username: faxgate",
          `  password: ${PASSWORD}`,
          "",
        ].join("\n"),
      );
      const reg = await runCli(["webhooks", "register", "--config", file]);
      expect(reg.code, reg.stderr).toBe(0);
      expect(reg.stdout).toMatch(/registered webhook \S+: https:\/\/fax\.example\.com\/faxgate\/events for 6 events/);
      const stored = (await api.get("/webhooks", TEST_KEYS.admin)).json;
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({ url: "https://fax.example.com/faxgate/events", auth: `faxgate:${PASSWORD}` });
      expect(Object.values(stored[0].events).filter(Boolean)).toHaveLength(6);
      // registering again updates rather than adding a second one
      expect((await runCli(["webhooks", "register", "--config", file])).stdout).toMatch(/^updated webhook/);
      expect((await api.get("/webhooks", TEST_KEYS.admin)).json).toHaveLength(1);

      const list = await runCli(["webhooks", "list", "--json", "--config", file]);
      expect(list.code, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toEqual([
        expect.objectContaining({ uuid: stored[0].uuid, auth: "faxgate:****" }),
      ]);
      for (const out of [reg, list]) expect(out.stdout + out.stderr).not.toContain(PASSWORD);

      const rm = await runCli(["webhooks", "remove", "--config", file]);
      expect(rm.code, rm.stderr).toBe(0);
      expect(rm.stdout).toContain(`removed webhook ${stored[0].uuid}`);
      expect((await api.get("/webhooks", TEST_KEYS.admin)).json).toEqual([]);
    } finally {
      await api.close();
      await emu.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
