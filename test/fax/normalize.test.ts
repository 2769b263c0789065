// Answers of both documented variants come out as the same types.
import { describe, expect, it } from "vitest";
import {
  serviceErrorOf,
  splitErrorText,
  toApiKey,
  toPage,
  toFaxRecord,
  toRecipientError,
  toSendManyResult,
} from "../../src/fax/normalize.js";
import { FaxgateError } from "../../src/errors.js";

const key = {
  uuid: "k1",
  userId: "u1",
  accountId: "a1",
  name: "gw",
  createdAt: "t",
  updatedAt: "t",
  expiresAt: "2027-01-01T00:00:00.000Z",
};

describe("API keys", () => {
  it("variant A: accessLevel array gives access and the level list", () => {
    const k = toApiKey({ ...key, accessLevel: ["print_driver"] });
    expect(k.access).toBe("print_driver");
    expect(k.accessLevel).toEqual(["print_driver"]);
  });
  it("variant B: access string gives a one-level list", () => {
    const k = toApiKey({ ...key, access: "admin" });
    expect(k.access).toBe("admin");
    expect(k.accessLevel).toEqual(["admin"]);
  });
  it("accepts accessLevel as flags, also as JSON text", () => {
    expect(toApiKey({ ...key, accessLevel: { base: false, admin: false, print_driver: true } }).access).toBe(
      "print_driver",
    );
    expect(toApiKey({ ...key, accessLevel: '{"base":true,"admin":false,"print_driver":false}' }).access).toBe("base");
  });
  it("a key with no known level is a bad answer, not a guess", () => {
    expect(() => toApiKey({ ...key, accessLevel: ["owner"] })).toThrow(FaxgateError);
  });
  it("an empty expiresAt becomes null", () => {
    expect(toApiKey({ ...key, access: "base", expiresAt: "" }).expiresAt).toBeNull();
  });
});

describe("pages", () => {
  const row = (id: string) => ({ messageId: id, status: "success" });
  it("variant A layout", () => {
    const p = toPage({ count: 12, rows: [row("m1")], limit: 5, offset: 10 }, toFaxRecord, {});
    expect(p).toMatchObject({ count: 12, limit: 5, offset: 10 });
    expect(p.rows.map((r) => r.messageId)).toEqual(["m1"]);
  });
  it("variant B layout: count as a string, limit and offset under query", () => {
    const p = toPage(
      { count: "12", rows: [row("m1"), row("m2")], query: { limit: "2", offset: "4" } },
      toFaxRecord,
      {},
    );
    expect(p).toMatchObject({ count: 12, limit: 2, offset: 4 });
    expect(typeof p.count).toBe("number");
  });
  it("fills in what the answer leaves out from what was asked", () => {
    const p = toPage({ count: 3, rows: [] }, toFaxRecord, { limit: 50, offset: 3 });
    expect(p).toMatchObject({ count: 3, limit: 50, offset: 3 });
  });
  it("a page without rows is a bad answer", () => {
    expect(() => toPage({ count: 1 }, toFaxRecord, {})).toThrow(/without a list/);
  });
  it("a fax record without a messageId is a bad answer", () => {
    expect(() => toPage({ count: 1, rows: [{ status: "success" }] }, toFaxRecord, {})).toThrow(/messageId/);
  });
});

describe("per-recipient errors", () => {
  it("{error, recipientFax}", () => {
    expect(toRecipientError({ error: "InvalidInputError: Invalid fax number", recipientFax: "+1555" })).toEqual({
      recipientFax: "+1555",
      name: "InvalidInputError",
      message: "Invalid fax number",
      error: "InvalidInputError: Invalid fax number",
    });
  });
  it("{input: {faxNumber}, error}", () => {
    const e = toRecipientError({
      input: { faxNumber: "+4420" },
      error: "NotAllowedError: International fax was disabled for account",
    });
    expect(e).toMatchObject({
      recipientFax: "+4420",
      name: "NotAllowedError",
      message: "International fax was disabled for account",
    });
  });
  it("text without a kind keeps the whole text as the message", () => {
    expect(splitErrorText("something broke: badly")).toEqual({ name: "Error", message: "something broke: badly" });
  });
  it("send-to-many envelope with both shapes mixed", () => {
    const r = toSendManyResult({
      success: [{ messageId: "m1", status: "processing" }],
      errors: [
        { error: "InvalidInputError: x", recipientFax: "1" },
        { input: { faxNumber: "2" }, error: "NotAllowedError: y" },
      ],
    });
    expect(r.success).toHaveLength(1);
    expect(r.errors.map((e) => [e.recipientFax, e.name])).toEqual([
      ["1", "InvalidInputError"],
      ["2", "NotAllowedError"],
    ]);
  });
});

describe("fax records", () => {
  it("cf sent back as JSON text becomes an object", () => {
    expect(toFaxRecord({ messageId: "m", status: "processing", cf: '{"job":"42"}' }).cf).toEqual({ job: "42" });
  });
});

describe("whole-request error bodies", () => {
  it('{"error":{"name","message"}}', () => {
    expect(serviceErrorOf('{"error":{"name":"NotAllowedError","message":"Non trial plan required."}}')).toEqual({
      name: "NotAllowedError",
      message: "Non trial plan required.",
    });
  });
  it("error as text, and bodies that are not JSON", () => {
    expect(serviceErrorOf('{"error":"NotFoundError: no such fax"}')).toEqual({
      name: "NotFoundError",
      message: "no such fax",
    });
    expect(serviceErrorOf("<html>Bad gateway</html>")).toEqual({});
  });
});
