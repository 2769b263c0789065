// Faults on demand: 503s, 429s with Retry-After, latency, and dropped answers to fax creation.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, type Api } from "./api.js";

let emu: TestEmulator;
let api: Api;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = apiFor(emu);
});
afterEach(async () => {
  await api.call("PUT", "/_emulator/faults", TEST_KEYS.admin, {
    latencyMs: 0,
    errorRate: 0,
    rateLimitRate: 0,
    rateLimitNext: 0,
    retryAfter: 1,
    dropRate: 0,
    deleteMode: "normal",
  });
});
afterAll(async () => {
  await api.close();
  await emu.stop();
});

const setFaults = async (f: Record<string, number | string>) => {
  const r = await api.call("PUT", "/_emulator/faults", TEST_KEYS.admin, f);
  expect(r.status, r.text).toBe(200);
  return r.json;
};

describe("faults", () => {
  it("GET shows the settings; PUT changes only what it names and refuses nonsense", async () => {
    expect((await api.get("/_emulator/faults", TEST_KEYS.admin)).json).toEqual({
      latencyMs: 0,
      errorRate: 0,
      rateLimitRate: 0,
      rateLimitNext: 0,
      retryAfter: 1,
      dropRate: 0,
      deleteMode: "normal",
    });
    expect(await setFaults({ latencyMs: 5 })).toEqual({
      latencyMs: 5,
      errorRate: 0,
      rateLimitRate: 0,
      rateLimitNext: 0,
      retryAfter: 1,
      dropRate: 0,
      deleteMode: "normal",
    });
    expect((await api.call("PUT", "/_emulator/faults", TEST_KEYS.admin, { deleteMode: "later" })).status).toBe(400);
    expect((await api.call("PUT", "/_emulator/faults", TEST_KEYS.admin, { errorRate: 2 })).status).toBe(400);
    expect((await api.call("PUT", "/_emulator/faults", TEST_KEYS.admin, { teleport: 1 })).status).toBe(400);
    expect((await api.call("PUT", "/_emulator/faults", TEST_KEYS.alice, { errorRate: 1 })).status).toBe(403);
  });

  it("errorRate 1: every API call is a 503 before anything happens; /_emulator is spared", async () => {
    const before = (await api.get("/_emulator/faxes", TEST_KEYS.admin)).json.length;
    await setFaults({ errorRate: 1 });
    const r = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550106060", coverPage: "true" }),
    );
    expect(r.status).toBe(503);
    expect(r.json.error.name).toBe("ServiceUnavailableError");
    expect((await api.get("/v1/me", TEST_KEYS.alice)).status).toBe(503);
    expect((await api.get("/_emulator/faxes", TEST_KEYS.admin)).json.length).toBe(before);
  });

  it("rateLimitRate 1: 429 with Retry-After: 1, nothing created", async () => {
    const before = (await api.get("/_emulator/faxes", TEST_KEYS.admin)).json.length;
    await setFaults({ rateLimitRate: 1 });
    const r = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550106060", coverPage: "true" }),
    );
    expect(r.status).toBe(429);
    expect(r.headers["retry-after"]).toBe("1");
    expect((await api.get("/_emulator/faxes", TEST_KEYS.admin)).json.length).toBe(before);
  });

  it("rateLimitNext 2: the next two calls, whoever makes them, 429 with the retryAfter given; then none", async () => {
    await setFaults({ rateLimitNext: 2, retryAfter: 3 });
    const a = await api.get("/v1/me", TEST_KEYS.alice);
    const b = await api.get("/v1/me", TEST_KEYS.bob);
    expect([a.status, b.status]).toEqual([429, 429]);
    expect(b.headers["retry-after"]).toBe("3");
    expect((await api.get("/v1/me", TEST_KEYS.alice)).status).toBe(200);
    expect((await api.get("/_emulator/faults", TEST_KEYS.admin)).json.rateLimitNext).toBe(0);
    expect((await api.call("PUT", "/_emulator/faults", TEST_KEYS.admin, { rateLimitNext: 1.5 })).status).toBe(400);
  });

  it("dropRate 1: the fax is created but the caller gets a socket error; reads are not dropped", async () => {
    await setFaults({ dropRate: 1 });
    const before = (await api.get("/_emulator/faxes", TEST_KEYS.admin)).json.length;
    await expect(
      api.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550106061", coverPage: "true", "cf[jobId]": "drop-1" }),
      ),
    ).rejects.toThrow();
    await expect(
      api.call(
        "POST",
        "/v1/faxes/multiple",
        TEST_KEYS.alice,
        form({ recipientFax: "+15550106062", coverPage: "true" }),
      ),
    ).rejects.toThrow();
    expect((await api.get("/v1/me", TEST_KEYS.alice)).status).toBe(200);
    const after = (await api.get("/_emulator/faxes", TEST_KEYS.admin)).json as Array<{
      cf: Record<string, string>;
      faxNumber: string;
    }>;
    expect(after.length).toBe(before + 2);
    expect(after.find((f) => f.cf.jobId === "drop-1")?.faxNumber).toBe("+15550106061");
  });

  it("a rate below 1 hits some requests and spares others", async () => {
    await setFaults({ errorRate: 0.5 });
    let errors = 0;
    for (let i = 0; i < 40; i++) if ((await api.get("/ping", TEST_KEYS.alice)).status === 503) errors++;
    expect(errors).toBeGreaterThan(5);
    expect(errors).toBeLessThan(35);
  });

  it("deleteMode: refuse answers 500 and keeps the fax; ignore answers 200 and keeps it too", async () => {
    const sent = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550106161", coverPage: "true" }),
    );
    const id = sent.json.messageId as string;
    const info = async () => (await api.get(`/v1/fax/${id}/info`, TEST_KEYS.aliceBase)).json;
    await setFaults({ deleteMode: "refuse" });
    expect((await api.call("DELETE", `/v1/fax/${id}`, TEST_KEYS.aliceBase)).status).toBe(500);
    expect(await info()).toMatchObject({ deletedAt: null, isFilePurged: false });
    await setFaults({ deleteMode: "ignore" });
    expect((await api.call("DELETE", `/v1/fax/${id}`, TEST_KEYS.aliceBase)).status).toBe(200);
    expect(await info()).toMatchObject({ deletedAt: null, isFilePurged: false });
    await setFaults({ deleteMode: "normal" });
    expect((await api.call("DELETE", `/v1/fax/${id}`, TEST_KEYS.aliceBase)).status).toBe(200);
    expect((await info()).isFilePurged).toBe(true);
  });

  it("latency delays but still answers", async () => {
    await setFaults({ latencyMs: 30 });
    expect((await api.get("/v1/me", TEST_KEYS.alice)).status).toBe(200);
  });
});
