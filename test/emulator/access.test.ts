// Authentication and the access matrix: which key level may make which call.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, type Api } from "./api.js";

let emu: TestEmulator;
let api: Api;
let aliceFax: string;
let bobFax: string;
let aliceId: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = apiFor(emu);
  aliceId = (await api.get("/v1/me", TEST_KEYS.alice)).json.userId;
  aliceFax = (
    await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550101111" }, [["a.txt", "hello"]]))
  ).json.messageId;
  bobFax = (
    await api.call("POST", "/v1/faxes", TEST_KEYS.bob, form({ faxNumber: "+15550102222" }, [["b.txt", "hello"]]))
  ).json.messageId;
});
afterAll(async () => {
  await api.close();
  await emu.stop();
});

describe("authentication", () => {
  it("refuses a missing, unknown or malformed key with 401 AuthenticationError", async () => {
    for (const key of [null, "no-such-key", ""]) {
      const r = await api.get("/v1/me", key);
      expect(r.status).toBe(401);
      expect(r.json.error.name).toBe("AuthenticationError");
    }
  });

  it("refuses an expired key and accepts it again once its expiry is moved", async () => {
    const created = await api.call("POST", "/api-keys", TEST_KEYS.admin, {
      name: "short",
      userId: aliceId,
      access: "base",
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    expect(created.status).toBe(200);
    const expired = await api.get("/v1/me", created.json.token);
    expect(expired.status).toBe(401);
    expect(expired.json.error.message).toMatch(/expired/);
    await api.call("PATCH", `/api-keys/${created.json.uuid}`, TEST_KEYS.admin, {
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect((await api.get("/v1/me", created.json.token)).status).toBe(200);
  });

  it("never echoes the token in an error", async () => {
    const r = await api.get("/v1/me", "secret-looking-token-123");
    expect(r.text).not.toContain("secret-looking-token-123");
  });

  it('accepts the RFC 7617 form "base64(token:)" as well', async () => {
    const r = await api.get("/v1/me", Buffer.from(`${TEST_KEYS.alice}:`).toString("base64"));
    expect(r.status).toBe(200);
    expect(r.json.email).toBe("alice@example.com");
  });
});

describe("access matrix", () => {
  const cases: Array<
    [string, string, string, (ids: { alice: string; bob: string; userId: string }) => unknown, Record<string, number>]
  > = [
    ["ping", "GET", "/ping", () => undefined, { admin: 200, base: 200, print_driver: 200 }],
    ["me", "GET", "/v1/me", () => undefined, { admin: 200, base: 200, print_driver: 200 }],
    ["cover pages", "GET", "/coverpages", () => undefined, { admin: 200, base: 200, print_driver: 200 }],
    ["list keys", "GET", "/api-keys", () => undefined, { admin: 200, base: 403, print_driver: 403 }],
    [
      "create key",
      "POST",
      "/api-keys",
      (i) => ({ name: "k", userId: i.userId, access: "base" }),
      { admin: 200, base: 403, print_driver: 403 },
    ],
    ["list contacts", "GET", "/v1/contacts", () => undefined, { admin: 200, base: 200, print_driver: 200 }],
    [
      "create contact",
      "POST",
      "/v1/contacts",
      () => ({ name: "New One", faxNumber: "(555) 010-0400" }),
      { admin: 200, base: 200, print_driver: 403 },
    ],
    ["history", "GET", "/v1/fax/history", () => undefined, { admin: 200, base: 200, print_driver: 200 }],
    ["emulator faxes", "GET", "/_emulator/faxes", () => undefined, { admin: 200, base: 403, print_driver: 403 }],
    ["emulator faults", "GET", "/_emulator/faults", () => undefined, { admin: 200, base: 403, print_driver: 403 }],
  ];
  const keyOf: Record<string, string> = {
    admin: TEST_KEYS.admin,
    base: TEST_KEYS.aliceBase,
    print_driver: TEST_KEYS.alice,
  };

  for (const [name, method, path, body, expected] of cases) {
    for (const [level, status] of Object.entries(expected)) {
      it(`${name}: ${level} -> ${status}`, async () => {
        const r = await api.call(
          method,
          path,
          keyOf[level],
          body({ alice: aliceFax, bob: bobFax, userId: aliceId }) as Record<string, unknown> | undefined,
        );
        expect(r.status).toBe(status);
        if (status === 403) expect(r.json.error.name).toBe("NotAllowedError");
      });
    }
  }

  it("print_driver reads its own fax (info, download) but may not archive or delete it", async () => {
    expect((await api.get(`/v1/fax/${aliceFax}/info`, TEST_KEYS.alice)).status).toBe(200);
    expect((await api.get(`/v1/fax/${aliceFax}/download`, TEST_KEYS.alice)).status).toBe(200);
    expect((await api.call("PATCH", `/v1/fax/${aliceFax}`, TEST_KEYS.alice, { isArchived: true })).status).toBe(403);
    expect((await api.call("DELETE", `/v1/fax/${aliceFax}`, TEST_KEYS.alice)).status).toBe(403);
    expect((await api.call("POST", "/v1/fax/resend", TEST_KEYS.alice, { messageId: aliceFax })).status).toBe(200);
  });

  it("a user cannot see another user's fax (404), an admin can", async () => {
    expect((await api.get(`/v1/fax/${bobFax}/info`, TEST_KEYS.alice)).status).toBe(404);
    expect((await api.get(`/v1/fax/${bobFax}/info`, TEST_KEYS.aliceBase)).status).toBe(404);
    expect((await api.get(`/v1/fax/${bobFax}/download`, TEST_KEYS.alice)).status).toBe(404);
    expect((await api.call("POST", "/v1/fax/resend", TEST_KEYS.alice, { messageId: bobFax })).status).toBe(404);
    expect((await api.get(`/v1/fax/${bobFax}/info`, TEST_KEYS.admin)).status).toBe(200);
  });

  it("base may archive and delete its own fax; an admin sees every user and may filter by userId", async () => {
    const r = await api.call(
      "PATCH",
      `/v1/fax/${aliceFax}`,
      TEST_KEYS.aliceBase,
      new URLSearchParams({ isArchived: "true" }),
    );
    expect(r.status).toBe(200);
    expect(r.json.isArchived).toBe(true);
    const all = await api.get("/v1/fax/history", TEST_KEYS.admin);
    expect(new Set(all.json.rows.map((f: { userId: string }) => f.userId)).size).toBeGreaterThanOrEqual(2);
    const onlyAlice = await api.get(`/v1/fax/history?userId=${aliceId}`, TEST_KEYS.admin);
    expect(onlyAlice.json.rows.every((f: { userId: string }) => f.userId === aliceId)).toBe(true);
    const bobId = (await api.get("/v1/me", TEST_KEYS.bob)).json.userId;
    expect((await api.get(`/v1/fax/history?userId=${bobId}`, TEST_KEYS.alice)).status).toBe(403);
    expect((await api.get(`/v1/contacts?userId=${bobId}`, TEST_KEYS.aliceBase)).status).toBe(403);
  });

  it("unknown endpoints and ids answer 404 NotFoundError", async () => {
    const r = await api.get("/v1/nothing-here", TEST_KEYS.admin);
    expect(r.status).toBe(404);
    expect(r.json.error.name).toBe("NotFoundError");
    expect((await api.get("/v1/fax/00000000-0000-0000-0000-000000000000/info", TEST_KEYS.admin)).status).toBe(404);
    expect((await api.call("PATCH", "/api-keys/nope", TEST_KEYS.admin, { name: "x" })).status).toBe(404);
    expect((await api.call("DELETE", "/v1/contacts/nope", TEST_KEYS.aliceBase)).status).toBe(404);
  });
});
