// /healthz and /readyz over real HTTP on a real Gateway (store in a temp folder, the emulator as
// the fax service): liveness is the process, the store and the disk, and costs no commit per
// request; readiness is the service and every key, so a provider outage does not fail liveness.
import { statSync } from "node:fs";
import path from "node:path";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { TEST_KEYS } from "../helpers/emulator.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

let g: TestGateway | null = null;
afterEach(async () => {
  await g?.stop();
  g = null;
});

async function start(opts: { minFreeMb?: number; bobKey?: string } = {}): Promise<{ base: string; data: string }> {
  g = await startGateway({
    name: "health",
    emulator: { delayMs: 100 },
    log: "quiet",
    config: {
      admin: { listen: "127.0.0.1:0", ...(opts.minFreeMb !== undefined ? { minFreeMb: opts.minFreeMb } : {}) },
      users: [
        { name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice },
        { name: "bob", email: "bob@example.com", apiKey: opts.bobKey ?? TEST_KEYS.bob },
      ],
    },
  });
  return { base: g.url("admin"), data: g.config.data };
}

async function get(
  url: string,
): Promise<{ status: number; body: { status: string; checks: Record<string, { ok: boolean; detail?: string }> } }> {
  const r = await request(url);
  return { status: r.statusCode, body: (await r.body.json()) as never };
}

describe("health endpoints", () => {
  it("/healthz and /readyz answer 200 when all is well", async () => {
    const { base } = await start();
    const live = await get(`${base}/healthz`);
    expect(live.status).toBe(200);
    expect(Object.keys(live.body.checks).sort()).toEqual(["disk", "process", "store"]);
    const ready = await get(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body.checks.api).toMatchObject({ ok: true, detail: "2 key(s) work" });
  });

  it("a burst of /healthz requests does not commit to the store once per request", async () => {
    const { base, data } = await start();
    await get(`${base}/healthz`);
    const wal = path.join(data, "faxgate.db-wal");
    const walSize = () => statSync(wal, { throwIfNoEntry: false })?.size ?? 0;
    const before = walSize();
    for (let i = 0; i < 200; i++)
      expect(
        await request(`${base}/healthz`).then(async (r) => {
          await r.body.text();
          return r.statusCode;
        }),
      ).toBe(200);
    // one commit appends at least one 4 KB page to the WAL; 200 would add 800 KB
    expect(walSize() - before).toBeLessThan(64 * 4096);
  });

  it("/healthz answers 503 naming the data disk when it has less room than admin.minFreeMb", async () => {
    const { base } = await start({ minFreeMb: 1e12 });
    const live = await get(`${base}/healthz`);
    expect(live.status).toBe(503);
    expect(live.body.checks.disk).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/MB free on the data disk .*admin\.minFreeMb/),
    });
  });

  it("a refused key or a service outage fails /readyz but not /healthz", async () => {
    const { base } = await start({ bobKey: "not-a-key-the-service-knows" });
    const ready = await get(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.body.checks.api!.detail).toMatch(/key of bob: API_AUTH/);
    expect(ready.body.checks.api!.detail).not.toContain("not-a-key-the-service-knows");
    expect(ready.body.checks.api!.detail).not.toMatch(/alice/);
    expect((await get(`${base}/healthz`)).status).toBe(200);
    await g!.emu.stop();
    expect((await get(`${base}/healthz`)).status).toBe(200);
  });
});
