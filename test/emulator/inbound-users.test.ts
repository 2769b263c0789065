// Emulator-only doors: inbound faxes injected for a user, user preferences changed, the global fax list.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, TEST_TAGS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, pageCount, pdfWithPages, type Api } from "./api.js";

let emu: TestEmulator;
let api: Api;

beforeAll(async () => {
  // outbound faxes stay processing for the whole file; inbound ones are done at once
  emu = await startTestEmulator({ delayMs: 60_000 });
  api = apiFor(emu);
});
afterAll(async () => {
  await api.close();
  await emu.stop();
});

const inbound = (fields: Record<string, string>, file?: [string, Uint8Array | string, string?]) => {
  const fd = form(fields);
  if (file)
    fd.append(
      "file",
      new Blob([typeof file[1] === "string" ? file[1] : new Uint8Array(file[1])], {
        type: file[2] ?? "application/pdf",
      }),
      file[0],
    );
  return api.call("POST", "/_emulator/inbound", TEST_KEYS.admin, fd);
};

describe("inbound faxes", () => {
  it("arrive for a user by email or userId, succeeded, inbound, with the document", async () => {
    const r = await inbound({ email: "alice@example.com", callerId: "+15557654321", csid: "ACME LAB" }, [
      "scan.pdf",
      await pdfWithPages(2),
    ]);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({
      direction: "inbound",
      status: "success",
      resultCode: "0",
      resultInfo: "OK",
      faxCsid: "ACME LAB",
      faxCallerId: "15557654321",
      pagesCount: 2,
    });
    const h = (await api.get("/v1/fax/history?direction=inbound", TEST_KEYS.alice)).json;
    expect(h.rows.map((f: { messageId: string }) => f.messageId)).toEqual([r.json.messageId]);
    const pdf = (await api.get(`/v1/fax/${r.json.messageId}/download`, TEST_KEYS.alice)).bytes;
    expect(await pageCount(pdf)).toBe(2);
    const bobId = (await api.get("/v1/me", TEST_KEYS.bob)).json.userId;
    const r2 = await inbound({ userId: bobId, callerId: "15557654322" }, ["note.txt", "hello bob", "text/plain"]);
    expect(r2.json.userId).toBe(bobId);
    expect((await api.get(`/v1/fax/${r2.json.messageId}/info`, TEST_KEYS.alice)).status).toBe(404);
  });

  it("to a user's number: theirs, named in its info's users, in the admin key's history with the others'", async () => {
    const bobId = (await api.get("/v1/me", TEST_KEYS.bob)).json.userId;
    const set = await api.call("PATCH", "/_emulator/users/bob@example.com", TEST_KEYS.admin, { phone: "15550100444" });
    expect(set.status, set.text).toBe(200);
    const r = await inbound({ to: "+1 555 010 0444", callerId: "+15557654321" }, ["a.txt", "x", "text/plain"]);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ userId: bobId, faxNumber: "+15550100444" });
    const info = (await api.get(`/v1/fax/${r.json.messageId}/info`, TEST_KEYS.admin)).json;
    expect(info.users).toEqual([{ userId: bobId, firstName: "Bob", lastName: "Baker", email: "bob@example.com" }]);
    const alices = await inbound({ email: "alice@example.com", callerId: "+15557654321" }, [
      "a.txt",
      "x",
      "text/plain",
    ]);
    const seen = (await api.get("/v1/fax/history?direction=inbound&limit=100", TEST_KEYS.admin)).json.rows as Array<{
      messageId: string;
      userId: string;
    }>;
    expect(seen.map((f) => f.messageId)).toEqual(expect.arrayContaining([r.json.messageId, alices.json.messageId]));
    // bob's own key sees his alone
    const bobs = (await api.get("/v1/fax/history?direction=inbound", TEST_KEYS.bob)).json.rows;
    expect(bobs.map((f: { messageId: string }) => f.messageId)).toContain(r.json.messageId);
    expect(bobs.every((f: { userId: string }) => f.userId === bobId)).toBe(true);
    // a number nobody has, and one several users share (every seeded user's default), are refused
    expect((await inbound({ to: "+15550100445", callerId: "+15557654321" }, ["a.txt", "x", "text/plain"])).status).toBe(
      404,
    );
    const shared = await inbound({ to: "+15550100999", callerId: "+15557654321" }, ["a.txt", "x", "text/plain"]);
    expect(shared.status).toBe(400);
    expect(shared.text).toContain("several users have the number");
  });

  it("refuses a missing user, caller id or file, and non-admin keys", async () => {
    expect(
      (await inbound({ email: "nobody@example.com", callerId: "+15557654321" }, ["a.txt", "x", "text/plain"])).status,
    ).toBe(404);
    expect((await inbound({ email: "alice@example.com" }, ["a.txt", "x", "text/plain"])).status).toBe(400);
    expect((await inbound({ email: "alice@example.com", callerId: "+15557654321" })).status).toBe(400);
    const fd = form({ email: "alice@example.com", callerId: "+15557654321" });
    fd.append("file", new Blob(["x"]), "a.txt");
    expect((await api.call("POST", "/_emulator/inbound", TEST_KEYS.aliceBase, fd)).status).toBe(403);
  });
});

describe("user preferences", () => {
  it("PATCH /_emulator/users/:email changes what /v1/me reports", async () => {
    const r = await api.call("PATCH", "/_emulator/users/alice@example.com", TEST_KEYS.admin, {
      emailNotifySendOption: "Failure",
      emailNotifyReceiveIncAttachment: false,
      emailToFaxCoverPageOption: true,
      firstName: "Alicia",
    });
    expect(r.status, r.text).toBe(200);
    const me = (await api.get("/v1/me", TEST_KEYS.alice)).json;
    expect(me).toMatchObject({
      emailNotifySendOption: "Failure",
      emailNotifyReceiveIncAttachment: false,
      emailToFaxCoverPageOption: true,
      firstName: "Alicia",
      emailNotifySendIncAttachment: true,
    });
    expect(
      (await api.call("PATCH", "/_emulator/users/alice@example.com", TEST_KEYS.admin, { password: "x" })).status,
    ).toBe(400);
    expect(
      (
        await api.call("PATCH", "/_emulator/users/alice@example.com", TEST_KEYS.admin, {
          emailToFaxCoverPageOption: "sure",
        })
      ).status,
    ).toBe(400);
    expect(
      (await api.call("PATCH", "/_emulator/users/nobody@example.com", TEST_KEYS.admin, { firstName: "X" })).status,
    ).toBe(404);
    expect(
      (await api.call("PATCH", "/_emulator/users/alice@example.com", TEST_KEYS.alice, { firstName: "X" })).status,
    ).toBe(403);
  });
});

describe("GET /_emulator/faxes", () => {
  it("lists every fax of every user with cf (JSON and bracket fields), tags and attachment names", async () => {
    await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550107070", cf: '{"ticket":"T-1"}', "cf[dept]": "lab", tags: TEST_TAGS.billing }, [
        ["first.txt", "a", "text/plain"],
        ["second.pdf", await pdfWithPages(1), "application/pdf"],
      ]),
    );
    await api.call("POST", "/v1/faxes", TEST_KEYS.bob, form({ faxNumber: "+15550107071", coverPage: "true" }));
    const all = (await api.get("/_emulator/faxes", TEST_KEYS.admin)).json as Array<{
      faxNumber: string;
      userId: string;
      createdAt: string;
    }>;
    const a = all.find((f) => f.faxNumber === "+15550107070")!;
    expect(a).toMatchObject({
      email: "alice@example.com",
      cf: { ticket: "T-1", dept: "lab" },
      tags: [TEST_TAGS.billing],
      attachments: ["first.txt", "second.pdf"],
      status: "processing",
      direction: "outbound",
      pagesCount: 2,
    });
    expect(a.userId).toEqual(expect.any(String));
    expect(Number.isNaN(Date.parse(a.createdAt))).toBe(false);
    expect(all.find((f) => f.faxNumber === "+15550107071")).toMatchObject({
      email: "bob@example.com",
      coverPage: true,
    });
  });
});
