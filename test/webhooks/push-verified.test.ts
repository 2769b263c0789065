// A pushed event is a hint, over real HTTP against a whole gateway and the emulator (over HTTPS):
// with the webhook credentials, a body saying "delivered" for a fax the service has not finished
// changes nothing, and a made-up received fax is not mailed; what is applied is the service's own
// record, fetched with the fax owner's key (the calls it costs are counted at the emulator). Both
// documented body formats are taken: JSON (whole, or under a wrapper) and the legacy multipart one.
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gateway } from "../../src/main.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { newJob } from "../helpers/store.js";
import { form, type Api } from "../emulator/api.js";
import { AUTH, postEvent, receiveFax, startWebhookRig, type WebhookRig } from "./rig.js";

const jobs: string[] = [];
let rig: WebhookRig;
let api: Api;
let gw: Gateway;
let url: string;

beforeAll(async () => {
  // faxes stay "processing" at the service for a minute: only a forged push could finish them
  rig = await startWebhookRig({
    delayMs: 60_000,
    quiet: true,
    // three faxes for the dispatcher's first look at start (polling is an hour away after that)
    beforeStart: async (g, dir) => {
      for (const n of ["4441", "4442", "4443"])
        jobs.push((await g.store.enqueue(newJob(dir, { recipients: [{ number: `+1555010${n}` }] }))).job.id);
    },
  });
  ({ api, gw, hookUrl: url } = rig);
}, 60_000);
afterAll(async () => {
  await rig?.stop();
});

const postJson = (body: unknown) => postEvent(url, body);

async function postLegacy(record: unknown): Promise<number> {
  const fd = form({ data: JSON.stringify(record) }, [["fax.pdf", "%PDF-1.4 not really", "application/pdf"]]);
  const res = await fetch(url, { method: "POST", body: fd, headers: { authorization: AUTH } });
  await res.arrayBuffer();
  return res.status;
}

const calls = async (): Promise<Record<string, number>> => (await api.get("/_emulator/requests", TEST_KEYS.admin)).json;
const total = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);

/** A fax of alice's the service has taken and not finished: its messageId. */
async function processingFax(): Promise<{ jobId: string; messageId: string }> {
  const jobId = jobs.shift()!;
  let messageId: string | null = null;
  await expect
    .poll(async () => (messageId = (await gw.store.getJob(jobId))!.recipients[0]!.messageId ?? null), {
      timeout: 30_000,
    })
    .toBeTruthy();
  return { jobId, messageId: messageId! };
}

describe("a pushed result is a hint", () => {
  it('a forged "delivered" (JSON, wrapped JSON, legacy multipart) leaves a fax the service has not finished as it is', async () => {
    const forged = (messageId: string) => ({
      messageId,
      direction: "outbound",
      status: "success",
      resultCode: "0",
      resultInfo: "OK",
      pagesCount: 1,
      pagesComplete: 1,
    });
    const perFax: number[] = [];
    for (const send of [
      (id: string) => postJson(forged(id)),
      (id: string) => postJson({ event: "fax.v1.outbound.complete", data: forged(id) }),
      (id: string) => postLegacy(forged(id)),
    ]) {
      const { jobId, messageId } = await processingFax();
      const before = await calls();
      expect(await send(messageId)).toBe(200);
      const after = await calls();
      perFax.push(total(after) - total(before));
      const info = Object.keys(after).find((k) => /^GET \/v1\/fax\/:[A-Za-z]+\/info$/.test(k));
      expect(info, JSON.stringify(after)).toBeDefined();
      expect(after[info!]! - (before[info!] ?? 0)).toBe(1);
      const r = (await gw.store.getJob(jobId))!.recipients[0]!;
      expect(r.state).toBe("processing");
    }
    expect(await gw.store.listNotifications({ kind: "outcome" } as never)).toEqual([]);
    process.stdout.write(
      `webhook verification: API calls per pushed outbound fax ${JSON.stringify(perFax)} (GET /v1/fax/:id/info)\n`,
    );
  });

  it("a made-up received fax is not mailed; a real one is, in either format", async () => {
    const me = (await api.get("/v1/me", TEST_KEYS.alice)).json as { userId?: string; uuid?: string };
    const userId = me.userId ?? me.uuid;
    const madeUp = {
      messageId: "0b6c4f1e-0000-4000-8000-000000000000",
      direction: "inbound",
      status: "success",
      userId,
      faxCallerId: "+15557654321",
      pagesCount: 1,
    };
    expect(await postJson(madeUp)).toBe(200);
    expect(await postLegacy(madeUp)).toBe(200);
    expect(await gw.store.listNotifications({ kind: "inbound" })).toEqual([]);
    // a real one, pushed in the legacy format by hand (the webhook is not registered at the emulator)
    const real = await receiveFax(api);
    const rec = (await api.get(`/v1/fax/${real.messageId}/info`, TEST_KEYS.alice)).json;
    expect(await postLegacy({ ...rec, userId })).toBe(200);
    const queued = await gw.store.listNotifications({ kind: "inbound" });
    expect(queued.map((n) => n.dedupeKey)).toEqual([`inbound:${real.messageId}`]);
  });

  it("refuses a body in neither format by name (415)", async () => {
    const r = await request(url, {
      method: "POST",
      body: "messageId=x",
      headers: { "content-type": "text/plain", authorization: AUTH },
    });
    expect(r.statusCode).toBe(415);
    expect(await r.body.text()).toMatch(/neither JSON nor multipart/);
  });
});
