// Every documented limit holds at its bound and is refused one past it, by the server itself.
import { readdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/emulator.js";
import { startTestEmulator, TEST_KEYS, TEST_SEED, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, type Api } from "./api.js";

let emu: TestEmulator;
let api: Api;
let aliceId: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = apiFor(emu);
  aliceId = (await api.get("/v1/me", TEST_KEYS.alice)).json.userId;
});
afterAll(async () => {
  await api.close();
  await emu.stop();
});

const FAX_LIMITS: Array<[string, number, string]> = [
  ["recipientName", 40, "x"],
  ["senderName", 40, "x"],
  ["subject", 55, "x"],
  ["callerId", 10, "5"],
  ["notes", 4000, "x"],
];

describe("fax field limits", () => {
  for (const [field, max, ch] of FAX_LIMITS) {
    it(`${field}: ${max} accepted, ${max + 1} refused (single and multiple)`, async () => {
      const ok = await api.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550104444", coverPage: "true", [field]: ch.repeat(max) }),
      );
      expect(ok.status).toBe(200);
      const over = await api.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550104444", coverPage: "true", [field]: ch.repeat(max + 1) }),
      );
      expect(over.status).toBe(400);
      expect(over.json.error).toMatchObject({ name: "InvalidInputError" });
      expect(over.json.error.message).toContain(field);
      const many = await api.call(
        "POST",
        "/v1/faxes/multiple",
        TEST_KEYS.alice,
        form({ recipientFax: "+15550104444", coverPage: "true", [field]: ch.repeat(max + 1) }),
      );
      expect(many.status).toBe(400);
    });
  }

  it("counts characters, not bytes", async () => {
    const r = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550104444", coverPage: "true", subject: "é".repeat(55) }),
    );
    expect(r.status).toBe(200);
  });
});

describe("API key name limit", () => {
  it("128 accepted, 129 refused, on create and update", async () => {
    const ok = await api.call("POST", "/api-keys", TEST_KEYS.admin, {
      name: "k".repeat(128),
      userId: aliceId,
      access: "print_driver",
    });
    expect(ok.status).toBe(200);
    expect(ok.json.name).toHaveLength(128);
    const over = await api.call("POST", "/api-keys", TEST_KEYS.admin, {
      name: "k".repeat(129),
      userId: aliceId,
      access: "print_driver",
    });
    expect(over.status).toBe(400);
    const upd = await api.call("PATCH", `/api-keys/${ok.json.uuid}`, TEST_KEYS.admin, { name: "k".repeat(129) });
    expect(upd.status).toBe(400);
  });
});

describe("history limit", () => {
  it("500 accepted, 501 and 0 refused", async () => {
    expect((await api.get("/v1/fax/history?limit=500", TEST_KEYS.alice)).status).toBe(200);
    expect((await api.get("/v1/fax/history?limit=501", TEST_KEYS.alice)).status).toBe(400);
    expect((await api.get("/v1/fax/history?limit=0", TEST_KEYS.alice)).status).toBe(400);
    expect((await api.get("/v1/fax/history?offset=-1", TEST_KEYS.alice)).status).toBe(400);
  });
});

describe("required fields and formats", () => {
  it("a fax needs a number, and files or a cover page", async () => {
    const noNumber = await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ coverPage: "true" }));
    expect(noNumber.status).toBe(400);
    expect(noNumber.json.error.message).toMatch(/faxNumber/);
    const nothing = await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550104444" }));
    expect(nothing.status).toBe(400);
    expect(nothing.json.error.message).toMatch(/attachments/);
  });

  it("fax numbers: E.164 with 8 to 15 digits, or digits that form one", async () => {
    const good = ["+4930123456", "+123456789012345", "1 (555) 010-1234", "555.010.1234"];
    for (const n of good) {
      const r = await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: n, coverPage: "true" }));
      expect(r.status, n).toBe(200);
      expect(r.json.faxNumber).toMatch(/^\+\d{8,15}$/);
    }
    const bad = ["+1234567", "+1234567890123456", "call me", "555-CALL-NOW", "12345"];
    for (const n of bad) {
      const r = await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: n, coverPage: "true" }));
      expect(r.status, n).toBe(400);
    }
  });

  it("send to many: bad recipients are listed in errors while the good ones are sent", async () => {
    const r = await api.call(
      "POST",
      "/v1/faxes/multiple",
      TEST_KEYS.alice,
      form({ recipientFax: "+15550105555,not-a-number,+1234", coverPage: "true" }),
    );
    expect(r.status).toBe(200);
    expect(r.json.success).toHaveLength(1);
    expect(r.json.success[0].faxNumber).toBe("+15550105555");
    expect(r.json.errors).toHaveLength(2);
    expect(r.json.errors.map((e: { input: { faxNumber: string } }) => e.input.faxNumber)).toEqual([
      "not-a-number",
      "+1234",
    ]);
    for (const e of r.json.errors) expect(e.error).toMatch(/^InvalidInputError: /);
  });

  it("send to many with neither files nor a cover page: an InvalidInputError per recipient", async () => {
    const r = await api.call(
      "POST",
      "/v1/faxes/multiple",
      TEST_KEYS.alice,
      form({ recipientFax: ["+15550105555", "+15550106666"] }),
    );
    expect(r.status).toBe(200);
    expect(r.json.success).toHaveLength(0);
    expect(r.json.errors).toHaveLength(2);
    expect(r.json.errors[0].error).toMatch(/^InvalidInputError: .*attachments/);
  });

  it("unknown tags and cover pages are refused, bad cf JSON too", async () => {
    expect(
      (
        await api.call(
          "POST",
          "/v1/faxes",
          TEST_KEYS.alice,
          form({ faxNumber: "+15550104444", coverPage: "true", tags: "no-such-tag" }),
        )
      ).status,
    ).toBe(400);
    expect(
      (
        await api.call(
          "POST",
          "/v1/faxes",
          TEST_KEYS.alice,
          form({ faxNumber: "+15550104444", coverPage: "true", coverPageId: "6f7c0d1e-0000-4000-8000-000000000000" }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await api.call(
          "POST",
          "/v1/faxes",
          TEST_KEYS.alice,
          form({ faxNumber: "+15550104444", coverPage: "true", cf: "{not json" }),
        )
      ).status,
    ).toBe(400);
  });

  it("a key needs a name and a known access level", async () => {
    expect((await api.call("POST", "/api-keys", TEST_KEYS.admin, { userId: aliceId, access: "base" })).status).toBe(
      400,
    );
    expect((await api.call("POST", "/api-keys", TEST_KEYS.admin, { name: "n", userId: aliceId })).status).toBe(400);
    expect(
      (await api.call("POST", "/api-keys", TEST_KEYS.admin, { name: "n", userId: aliceId, access: "root" })).status,
    ).toBe(400);
    expect(
      (
        await api.call("POST", "/api-keys", TEST_KEYS.admin, {
          name: "n",
          userId: aliceId,
          accessLevel: '{"base":false,"admin":false,"print_driver":false}',
        })
      ).status,
    ).toBe(400);
    expect(
      (await api.call("POST", "/api-keys", TEST_KEYS.admin, { name: "n", userId: "no-such-user", access: "base" }))
        .status,
    ).toBe(404);
  });

  it("an upload over the file size limit gets 413 and leaves no fax behind", async () => {
    const small = await startEmulator({
      dataDir: path.join(emu.dataDir, "small"),
      seed: TEST_SEED,
      maxFileBytes: 1024,
    });
    const sapi = apiFor(small);
    try {
      const ok = await sapi.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550104444" }, [["ok.txt", "x".repeat(1024), "text/plain"]]),
      );
      expect(ok.status).toBe(200);
      const big = await sapi.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550104444" }, [["big.txt", "x".repeat(1025), "text/plain"]]),
      );
      expect(big.status).toBe(413);
      expect(big.json.error.name).toBe("PayloadTooLargeError");
      expect((await sapi.get("/_emulator/faxes", TEST_KEYS.admin)).json).toHaveLength(1);
      expect(await readdir(path.join(emu.dataDir, "small", "uploads"))).toEqual([]);
    } finally {
      await sapi.close();
      await small.close();
    }
  });

  it("a body over the size limit gets 413", async () => {
    const big = "x".repeat(3 * 1024 * 1024);
    const r = await api.call("POST", "/v1/contacts", TEST_KEYS.aliceBase, { name: big });
    expect(r.status).toBe(413);
    expect(r.json.error.name).toBe("PayloadTooLargeError");
  });
});
