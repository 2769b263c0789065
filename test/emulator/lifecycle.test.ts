// A fax's life by the clock: processing then transmitting, half of delayMs each (scheduled before
// its date), then the outcome the last four digits of the destination call for; resend, archive
// and delete.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, manualClock, pageCount, type Api } from "./api.js";

const clock = manualClock();
let emu: TestEmulator;
let api: Api;

beforeAll(async () => {
  emu = await startTestEmulator({ delayMs: 5000, clock });
  api = apiFor(emu);
});
afterAll(async () => {
  await api.close();
  await emu.stop();
});

const send = async (faxNumber: string, extra: Record<string, string> = {}) => {
  const r = await api.call(
    "POST",
    "/v1/faxes",
    TEST_KEYS.alice,
    form({ faxNumber, ...extra }, [["doc.txt", "one page of text"]]),
  );
  expect(r.status).toBe(200);
  return r.json;
};
const info = async (id: string) => (await api.get(`/v1/fax/${id}/info`, TEST_KEYS.alice)).json;

describe("outcomes by the last four digits", () => {
  // The emulator's own table, written out here so a change to it is a visible test change (the
  // product's table of results is not the reference: the emulator models the real service).
  const rules: Array<[string, string, string | null, string | null, number]> = [
    ["+15550100000", "failed", "6100", "Fax Number Busy", 1],
    ["+15550100001", "failed", "6200", "Fax No Answer", 1],
    ["+15550100002", "failed", "6300", "No Fax Tone Detected", 1],
    ["+15550100003", "success", "0", "OK", 2],
    ["+15550100004", "failed", "6000", "Fax Connect Failed", 1],
    ["+15550100005", "failed", "5100", "Fax Request Blocked", 1],
    ["+15550100006", "failed", "5200", "Fax Rendering Issue", 1],
    ["+15550100007", "failed", "7734", "Carrier Route Withdrawn", 1],
    ["+15550100008", "failed", null, null, 1],
    ["+15550100009", "cancelled", null, null, 0],
    ["+15550107777", "success", "0", "OK", 1],
  ];
  for (const [number, status, code, text, attempt] of rules) {
    it(`${number.slice(-4)} -> ${status} (${code ?? "no code"}, attempt ${attempt})`, async () => {
      const created = await send(number);
      expect(created).toMatchObject({
        status: "processing",
        messageNumber: null,
        deliveryId: null,
        resultCode: null,
        resultInfo: null,
      });
      clock.advance(2499);
      expect((await info(created.messageId)).status).toBe("processing");
      clock.advance(1);
      const transmitting = await info(created.messageId);
      expect(transmitting).toMatchObject({ status: "transmitting", resultCode: null, resultInfo: null });
      expect(transmitting.messageNumber).toMatch(/^\d+$/);
      expect(transmitting.deliveryId).toEqual(expect.any(String));
      clock.advance(2499);
      expect((await info(created.messageId)).status).toBe("transmitting");
      clock.advance(1);
      const done = await info(created.messageId);
      expect(done).toMatchObject({ status, resultCode: code, resultInfo: text, faxAttempt: attempt });
      if (status === "success")
        expect(done.errorCode === "0" || done.errorCode === "" || done.errorCode === null).toBe(true);
      else expect(done).toMatchObject({ errorCode: code, errorInfo: text });
      expect(done.resolvedDate).toBe(new Date(clock.now()).toISOString());
      expect(done.pagesComplete).toBe(status === "success" ? done.pagesCount : 0);
      if (status === "success") expect(done.duration).toBeGreaterThan(0);
    });
  }
});

describe("scheduled faxes", () => {
  it("stay scheduled until their date, then process for delayMs", async () => {
    const at = clock.now() + 60_000;
    const created = await send("+15550108888", { scheduledDate: new Date(at).toISOString() });
    expect(created.status).toBe("scheduled");
    expect(created.scheduledDate).toBe(new Date(at).toISOString());
    clock.advance(59_999);
    expect((await info(created.messageId)).status).toBe("scheduled");
    clock.advance(1);
    expect((await info(created.messageId)).status).toBe("processing");
    clock.advance(2500);
    expect((await info(created.messageId)).status).toBe("transmitting");
    clock.advance(2500);
    expect((await info(created.messageId)).status).toBe("success");
  });

  it("a scheduledDate in the past sends now; a bad one is refused", async () => {
    const created = await send("+15550108888", { scheduledDate: new Date(clock.now() - 60_000).toISOString() });
    expect(created.status).toBe("processing");
    const bad = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      form({ faxNumber: "+15550108888", coverPage: "true", scheduledDate: "next tuesday" }),
    );
    expect(bad.status).toBe(400);
  });
});

describe("resend, archive, delete", () => {
  it("resend makes a new fax from the same document, optionally to a new number", async () => {
    const first = await send("+15550100000", { coverPage: "true", subject: "Invoice 7" });
    clock.advance(5000);
    const again = await api.call(
      "POST",
      "/v1/fax/resend",
      TEST_KEYS.alice,
      new URLSearchParams({ messageId: first.messageId, recipientFax: "+15550109999" }),
    );
    expect(again.status).toBe(200);
    expect(again.json.errors).toEqual([]);
    expect(again.json.success).toHaveLength(1);
    const copy = again.json.success[0];
    expect(copy.messageId).not.toBe(first.messageId);
    expect(copy).toMatchObject({
      faxNumber: "+15550109999",
      status: "processing",
      subject: "Invoice 7",
      pagesCount: first.pagesCount,
    });
    const a = await api.get(`/v1/fax/${first.messageId}/download`, TEST_KEYS.alice);
    const b = await api.get(`/v1/fax/${copy.messageId}/download`, TEST_KEYS.alice);
    expect(b.bytes.equals(a.bytes)).toBe(true);
    const same = await api.call("POST", "/v1/fax/resend", TEST_KEYS.alice, { messageId: first.messageId });
    expect(same.json.success[0].faxNumber).toBe("+15550100000");
    const badNumber = await api.call("POST", "/v1/fax/resend", TEST_KEYS.alice, {
      messageId: first.messageId,
      recipientFax: "nope",
    });
    expect(badNumber.json.success).toEqual([]);
    expect(badNumber.json.errors[0]).toMatchObject({ input: { faxNumber: "nope" } });
    expect(badNumber.json.errors[0].error).toMatch(/^InvalidInputError: /);
    expect((await api.call("POST", "/v1/fax/resend", TEST_KEYS.alice, {})).status).toBe(400);
  });

  it("archive toggles isArchived; delete answers 200 and then 404", async () => {
    const f = await send("+15550101212");
    const arch = await api.call("PATCH", `/v1/fax/${f.messageId}`, TEST_KEYS.aliceBase, { isArchived: true });
    expect(arch.json.isArchived).toBe(true);
    const unarch = await api.call(
      "PATCH",
      `/v1/fax/${f.messageId}`,
      TEST_KEYS.aliceBase,
      new URLSearchParams({ isArchived: "false" }),
    );
    expect(unarch.json.isArchived).toBe(false);
    expect(
      (await api.call("PATCH", `/v1/fax/${f.messageId}`, TEST_KEYS.aliceBase, { isArchived: "maybe" })).status,
    ).toBe(400);
    const del = await api.call("DELETE", `/v1/fax/${f.messageId}`, TEST_KEYS.aliceBase);
    expect(del.status).toBe(200);
    // the record still answers, saying it is deleted and its file purged (what a caller checks)
    const info = await api.get(`/v1/fax/${f.messageId}/info`, TEST_KEYS.aliceBase);
    expect(info.status).toBe(200);
    expect(info.json.deletedAt).toMatch(/^\d{4}-/);
    expect(info.json.isFilePurged).toBe(true);
    expect((await api.get(`/v1/fax/${f.messageId}/download`, TEST_KEYS.aliceBase)).status).toBe(404);
    expect((await api.call("DELETE", `/v1/fax/${f.messageId}`, TEST_KEYS.aliceBase)).status).toBe(404);
  });

  it("download is a PDF with its headers, also with ?format=pdf", async () => {
    const f = await send("+15550101313");
    for (const q of ["", "?format=pdf"]) {
      const r = await api.get(`/v1/fax/${f.messageId}/download${q}`, TEST_KEYS.alice);
      expect(r.status).toBe(200);
      expect(r.headers["content-type"]).toBe("application/pdf");
      expect(Number(r.headers["content-length"])).toBe(r.bytes.length);
      expect(String(r.headers["content-disposition"])).toMatch(/^attachment; filename=".+\.pdf"$/);
      expect(await pageCount(r.bytes)).toBe(f.pagesCount);
    }
    expect((await api.get(`/v1/fax/${f.messageId}/download?format=tiff`, TEST_KEYS.alice)).status).toBe(400);
  });

  it("a cover-only fax may come as JSON or form-urlencoded, with cf as an object or bracket fields", async () => {
    const json = await api.call("POST", "/v1/faxes", TEST_KEYS.alice, {
      faxNumber: "+15550101515",
      coverPage: true,
      cf: { ref: "J-1" },
      subject: "json",
    });
    expect(json.status, json.text).toBe(200);
    expect(json.json).toMatchObject({ cf: { ref: "J-1" }, subject: "json", pagesCount: 1 });
    const urlenc = await api.call(
      "POST",
      "/v1/faxes",
      TEST_KEYS.alice,
      new URLSearchParams({ faxNumber: "+15550101516", coverPage: "true", "cf[ref]": "U-1" }),
    );
    expect(urlenc.json).toMatchObject({ cf: { ref: "U-1" }, faxNumber: "+15550101516" });
  });

  it("info carries the owner and the account", async () => {
    const f = await send("+15550101414");
    const i = await info(f.messageId);
    expect(i.users).toEqual([expect.objectContaining({ email: "alice@example.com", firstName: "Alice" })]);
    expect(i.account).toMatchObject({ uuid: emu.accountId, companyName: "Acme Clinic" });
    expect(typeof i.account.supportCode).toBe("string");
  });
});

describe("a creation answer", () => {
  it("shows the fax as created, however long the answer took to leave (a new send returns processing)", async () => {
    // a machine so slow that every look at the clock finds 3 s gone: half of delayMs and more
    let t = Date.parse("2026-03-02T15:00:00.000Z");
    const slow = { now: () => (t += 3000) };
    const slowEmu = await startTestEmulator({ delayMs: 5000, clock: slow });
    const slowApi = apiFor(slowEmu);
    try {
      const one = await slowApi.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550103333" }, [["doc.txt", "one page of text"]]),
      );
      expect(one.status).toBe(200);
      expect(one.json.status).toBe("processing");
      expect(one.json.messageNumber).toBeNull();
      const many = await slowApi.call(
        "POST",
        "/v1/faxes/multiple",
        TEST_KEYS.alice,
        form({ recipientFax: "+15550103333" }, [["doc.txt", "one page of text"]]),
      );
      expect(many.status).toBe(200);
      expect(many.json.success.map((f: { status: string }) => f.status)).toEqual(["processing"]);
      // and a later look sees it as it is by then
      expect((await slowApi.get(`/v1/fax/${one.json.messageId}/info`, TEST_KEYS.alice)).json.status).toBe("success");
    } finally {
      await slowApi.close();
      await slowEmu.stop();
    }
  });
});
