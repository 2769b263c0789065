// Contacts (own, public, organizations with members, paging, order, search, bulk delete) and API
// keys (create with either request shape, update, list with user, delete).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, type Api } from "./api.js";

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

type C = {
  uuid: string;
  name: string;
  faxNumber: string | null;
  isOrganization: boolean;
  isPublic: boolean;
  contacts?: C[];
  organizationId: string | null;
};
const list = async (qs = "", key: string = TEST_KEYS.alice) => {
  const r = await api.get(`/v1/contacts${qs ? `?${qs}` : ""}`, key);
  expect(r.status, r.text).toBe(200);
  return r.json as { count: number; rows: C[]; limit: number; offset: number };
};

describe("contacts", () => {
  it("a user sees its own contacts and the account's public ones, by name; organizations carry members", async () => {
    const l = await list();
    expect(l.rows.map((c) => c.name)).toEqual(["Acme Billing", "Globex", "Globex Accounts", "Initech Front Desk"]);
    const globex = l.rows.find((c) => c.name === "Globex")!;
    expect(globex.isOrganization).toBe(true);
    expect(globex.contacts?.map((m) => m.name)).toEqual(["Globex Accounts"]);
    expect(l.rows.find((c) => c.name === "Initech Front Desk")).toMatchObject({
      isPublic: true,
      faxNumber: "(555) 010-0300",
    });
    const bob = await list("", TEST_KEYS.bob);
    expect(bob.rows.map((c) => c.name)).toEqual(["Initech Front Desk"]);
  });

  it("pages by records, orders, and searches name, fax, phone and email", async () => {
    const p = await list("limit=2&offset=1&order=name%20desc");
    expect(p).toMatchObject({ count: 4, limit: 2, offset: 1 });
    expect(p.rows.map((c) => c.name)).toEqual(["Globex Accounts", "Globex"]);
    expect((await list("query=010-0200")).rows.map((c) => c.name)).toEqual(["Globex Accounts"]);
    expect((await list("query=billing@acme")).rows.map((c) => c.name)).toEqual(["Acme Billing"]);
    expect((await list("query=initech")).rows.map((c) => c.name)).toEqual(["Initech Front Desk"]);
    expect((await api.get("/v1/contacts?order=drop%20table", TEST_KEYS.alice)).status).toBe(400);
  });

  it("create (form or JSON), update, delete; numbers in (***) ***-**** form", async () => {
    const created = await api.call(
      "POST",
      "/v1/contacts",
      TEST_KEYS.aliceBase,
      new URLSearchParams({
        name: "Hooli Legal",
        faxNumber: "5550100700",
        email: "legal@hooli.example",
        isPublic: "false",
      }),
    );
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({
      name: "Hooli Legal",
      faxNumber: "(555) 010-0700",
      email: "legal@hooli.example",
      isOrganization: false,
      userId: aliceId,
    });
    const org = await api.call("POST", "/v1/contacts", TEST_KEYS.aliceBase, { name: "Hooli", isOrganization: true });
    const upd = await api.call("PATCH", `/v1/contacts/${created.json.uuid}`, TEST_KEYS.aliceBase, {
      organizationId: org.json.uuid,
      phoneNumber: "(555) 010-0701",
    });
    expect(upd.status).toBe(200);
    expect(upd.json).toMatchObject({
      organizationId: org.json.uuid,
      phoneNumber: "(555) 010-0701",
      name: "Hooli Legal",
    });
    const l = await list("query=Hooli");
    expect(l.rows.find((c) => c.name === "Hooli")?.contacts?.map((m) => m.name)).toEqual(["Hooli Legal"]);
    expect(
      (await api.call("POST", "/v1/contacts", TEST_KEYS.aliceBase, { name: "Bad", faxNumber: "fax me" })).status,
    ).toBe(400);
    expect((await api.call("POST", "/v1/contacts", TEST_KEYS.aliceBase, { faxNumber: "5550100700" })).status).toBe(400);
    expect(
      (
        await api.call("PATCH", `/v1/contacts/${created.json.uuid}`, TEST_KEYS.aliceBase, {
          organizationId: created.json.uuid,
        })
      ).status,
    ).toBe(400);
    const del = await api.call("DELETE", `/v1/contacts/${created.json.uuid}`, TEST_KEYS.aliceBase);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expect((await api.call("DELETE", `/v1/contacts/${created.json.uuid}`, TEST_KEYS.aliceBase)).status).toBe(404);
  });

  it("may not change another user's private contact, nor a public one that is not publicEditable", async () => {
    const bobsOwn = await api.call("POST", "/v1/contacts", TEST_KEYS.admin, {
      name: "Private",
      faxNumber: "5550100800",
    });
    expect(
      (await api.call("PATCH", `/v1/contacts/${bobsOwn.json.uuid}`, TEST_KEYS.aliceBase, { name: "Mine now" })).status,
    ).toBe(404);
    const initech = (await list("query=Initech")).rows[0];
    expect(
      (await api.call("PATCH", `/v1/contacts/${initech.uuid}`, TEST_KEYS.aliceBase, { name: "Renamed" })).status,
    ).toBe(403);
    await api.call("PATCH", `/v1/contacts/${initech.uuid}`, TEST_KEYS.admin, { publicEditable: true });
    expect(
      (await api.call("PATCH", `/v1/contacts/${initech.uuid}`, TEST_KEYS.aliceBase, { email: "desk@initech.example" }))
        .status,
    ).toBe(200);
  });

  it("an admin creates a contact for another user with ?userId", async () => {
    const bobId = (await api.get("/v1/me", TEST_KEYS.bob)).json.userId;
    const r = await api.call("POST", `/v1/contacts?userId=${bobId}`, TEST_KEYS.admin, {
      name: "For Bob",
      faxNumber: "5550100900",
    });
    expect(r.json.userId).toBe(bobId);
    expect((await list("", TEST_KEYS.bob)).rows.map((c) => c.name)).toContain("For Bob");
  });

  it("bulk delete takes contactIds or contactsIds", async () => {
    const mk = async (name: string) =>
      (await api.call("POST", "/v1/contacts", TEST_KEYS.aliceBase, { name })).json.uuid as string;
    const [a, b, c] = [await mk("Bulk A"), await mk("Bulk B"), await mk("Bulk C")];
    expect((await api.call("DELETE", `/v1/contacts/bulk?contactIds=${a},${b}`, TEST_KEYS.aliceBase)).status).toBe(204);
    expect((await api.call("DELETE", `/v1/contacts/bulk?contactsIds=${c}`, TEST_KEYS.aliceBase)).status).toBe(204);
    expect((await list("query=Bulk")).count).toBe(0);
    expect((await api.call("DELETE", "/v1/contacts/bulk?contactIds=nope", TEST_KEYS.aliceBase)).status).toBe(404);
    expect((await api.call("DELETE", "/v1/contacts/bulk", TEST_KEYS.aliceBase)).status).toBe(400);
  });
});

describe("API keys", () => {
  it("create with variant A accessLevel (JSON object string), use it, update it, delete it", async () => {
    const r = await api.call(
      "POST",
      "/api-keys",
      TEST_KEYS.admin,
      new URLSearchParams({
        name: "gateway",
        userId: aliceId,
        accessLevel: '{"base":false,"admin":false,"print_driver":true}',
      }),
    );
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      name: "gateway",
      userId: aliceId,
      accountId: emu.accountId,
      accessLevel: ["print_driver"],
      expiresAt: null,
    });
    expect(r.json.token).toMatch(/^\S{20,}$/);
    expect((await api.get("/v1/me", r.json.token)).json.email).toBe("alice@example.com");
    const upd = await api.call("PATCH", `/api-keys/${r.json.uuid}`, TEST_KEYS.admin, {
      access: "base",
      name: "gateway 2",
      expiresAt: "2030-01-01T00:00:00.000Z",
    });
    expect(upd.json).toMatchObject({ name: "gateway 2", accessLevel: ["base"], expiresAt: "2030-01-01T00:00:00.000Z" });
    expect(upd.json.user).toMatchObject({
      uuid: aliceId,
      userId: aliceId,
      email: "alice@example.com",
      firstName: "Alice",
    });
    const keys = await api.get(`/api-keys?userId=${aliceId}`, TEST_KEYS.admin);
    expect(keys.json.map((k: { name: string }) => k.name)).toEqual(["alice printer", "alice base", "gateway 2"]);
    const del = await api.call("DELETE", `/api-keys/${r.json.uuid}`, TEST_KEYS.admin);
    expect(del.status).toBe(204);
    expect((await api.get("/v1/me", r.json.token)).status).toBe(401);
  });

  it("create with variant B access string, and accessLevel as a real JSON object", async () => {
    const b = await api.call("POST", "/api-keys", TEST_KEYS.admin, { name: "b", userId: aliceId, access: "base" });
    expect(b.json.accessLevel).toEqual(["base"]);
    const obj = await api.call("POST", "/api-keys", TEST_KEYS.admin, {
      name: "o",
      userId: aliceId,
      accessLevel: { base: false, admin: true, print_driver: false },
    });
    expect(obj.json.accessLevel).toEqual(["admin"]);
  });
});

describe("me and cover pages", () => {
  it("me has the user, preferences and account (variant A extras)", async () => {
    const me = (await api.get("/v1/me", TEST_KEYS.bob)).json;
    expect(me).toMatchObject({
      email: "bob@example.com",
      firstName: "Bob",
      userRole: "user",
      emailNotifySendOption: "Failure",
      emailNotifySendIncAttachment: false,
      emailNotifyReceiveOption: "None",
      emailToFaxCoverPageOption: true,
      companyName: "Acme Clinic",
      account: {
        uuid: emu.accountId,
        accountName: "Acme Clinic",
        timezone: "America/New_York",
        usersTokenLife: "14400",
      },
    });
  });

  it("cover pages: two, one default", async () => {
    const cp = (await api.get("/coverpages", TEST_KEYS.alice)).json;
    expect(cp).toHaveLength(2);
    expect(cp.filter((c: { isDefault: boolean }) => c.isDefault)).toHaveLength(1);
    expect(cp[0]).toEqual({
      uuid: expect.any(String),
      name: expect.any(String),
      isDefault: true,
      createdAt: expect.any(String),
    });
  });

  it("ping answers plain text OK, as the real service does", async () => {
    const p = await api.get("/ping", TEST_KEYS.alice);
    expect(p.status).toBe(200);
    expect(p.text).toBe("OK");
    expect(p.headers["content-type"]).toMatch(/^text\/plain/);
  });
});
