// A pushed result against the real store: applied to the fax we follow, "send it again later" while
// a send is still being recorded (the event can beat the send's own answer), ignored otherwise.
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/logger.js";
import { WebhookReceiver } from "../../src/webhooks/receiver.js";
import { request } from "undici";
import { newJob, tempStore, type TempStore } from "../helpers/store.js";
import { testDispatcher } from "../helpers/collaborators.js";

let t: TempStore | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

describe("applyServiceRecord", () => {
  it("applies, asks for later, or ignores", async () => {
    t = tempStore();
    const done = {
      messageId: "m-1",
      status: "success",
      resultCode: "0",
      resultInfo: "OK",
      pagesCount: 1,
      pagesComplete: 1,
    };
    // never started and never sending: the one call is the pushed fax's own record, asked of the service
    const asked: string[] = [];
    const service = {
      faxInfo: async (id: string) => {
        asked.push(id);
        return done;
      },
    };
    const dispatcher = testDispatcher({
      store: t.store,
      clientFor: () => service as never,
    });
    expect(await dispatcher.applyServiceRecord(done)).toBe("unknown");

    const { job } = await t.store.enqueue(newJob(t.dir));
    const [group] = await t.store.claimDue("test-owner", 10, 60_000);
    expect(group!.recipients[0]!.state).toBe("sending");
    // the service's event arrived before the send's answer was recorded
    expect(await dispatcher.applyServiceRecord(done)).toBe("later");

    expect(
      await t.store.markAccepted({ jobId: job.id, idx: 0 }, group!.sendId, {
        messageId: "m-1",
        pagesCount: 1,
      } as never),
    ).toBe(true);
    expect(await dispatcher.applyServiceRecord({ ...done, status: "failed" })).toBe("applied");
    expect(asked).toEqual(["m-1"]);
    expect((await t.store.getJob(job.id))!.recipients[0]).toMatchObject({
      state: "delivered",
      resultCode: "0",
      resultInfo: "OK",
    });
    // the same event again: a fax we know that is final already
    expect(await dispatcher.applyServiceRecord(done)).toBe("unknown");
  });
});

describe("the receiver's answers", () => {
  it("200 once applied, 503 when asked for later or when applying failed (so the service sends it again)", async () => {
    let answer: () => boolean | "later" = () => true;
    const rx = new WebhookReceiver({
      config: {
        listen: "127.0.0.1:0",
        url: "http://127.0.0.1/hook",
        username: "u",
        password: "a-long-password",
        pollInterval: 300_000,
      },
      handlers: { outbound: () => answer(), inbound: () => true },
      logger: silentLogger(),
    });
    const { port } = await rx.listen();
    try {
      const post = async () => {
        const r = await request(`http://127.0.0.1:${port}/hook`, {
          method: "POST",
          body: JSON.stringify({ messageId: "m-9", direction: "outbound", status: "success" }),
          headers: {
            "content-type": "application/json",
            authorization: `Basic ${Buffer.from("u:a-long-password").toString("base64")}`,
          },
        });
        await r.body.dump();
        return r.statusCode;
      };
      expect(await post()).toBe(200);
      answer = () => "later";
      expect(await post()).toBe(503);
      answer = () => {
        throw new Error("disk full");
      };
      expect(await post()).toBe(503);
      // only the configured path is served
      const other = await request(`http://127.0.0.1:${port}/elsewhere`, {
        method: "POST",
        body: "{}",
        headers: { "content-type": "application/json" },
      });
      await other.body.dump();
      expect(other.statusCode).toBe(404);
    } finally {
      await rx.close();
    }
  });
});
