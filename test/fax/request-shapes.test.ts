// What goes over the wire, recorded by a bare HTTPS server: the emulator accepts both variants'
// request shapes, so only a recorder can show that variant A and B each send their own.
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createFaxAgent, FaxClient } from "../../src/fax/client.js";
import { isFaxgateError } from "../../src/errors.js";
import { formOf, json, multipartOf, startStub, type StubServer } from "./stub-server.js";
import { tempFolder } from "../tmp-dir.js";

let stub: StubServer;
let agent: ReturnType<typeof createFaxAgent>;
let dir: string;
const calls: string[] = [];
const client = (variant: "a" | "b" = "a", baseUrl = stub.baseUrl) =>
  new FaxClient({
    baseUrl,
    apiKey: "shape-key",
    variant,
    dispatcher: agent,
    observer: (op, status) => calls.push(`${op} ${status}`),
  });

beforeAll(async () => {
  stub = await startStub();
  agent = createFaxAgent({ ca: stub.caPem, timeoutMs: 5000 });
  dir = tempFolder("test");
  await writeFile(path.join(dir, "a.pdf"), "%PDF-1.4 first\n");
  await writeFile(path.join(dir, "b.txt"), "second file\n");
});
afterAll(async () => {
  await agent.close();
  await stub.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  stub.requests.length = 0;
  calls.length = 0;
  stub.handle((req, res) => {
    if (req.url.startsWith("/api-keys") && req.method !== "GET")
      return json(res, 200, {
        uuid: "k",
        userId: "u",
        accountId: "a",
        name: "n",
        access: "base",
        createdAt: "",
        updatedAt: "",
      });
    if (req.url.startsWith("/api-keys")) return json(res, 200, []);
    if (req.url.startsWith("/v1/contacts/bulk") || req.method === "DELETE") return void res.writeHead(204).end();
    if (req.url.startsWith("/v1/contacts") && req.method === "GET")
      return json(res, 200, { count: 0, rows: [], limit: 10, offset: 0 });
    if (req.url.startsWith("/v1/contacts")) return json(res, 200, { uuid: "c", name: "x" });
    if (req.url.startsWith("/v1/fax/history")) return json(res, 200, { count: 0, rows: [], limit: 10, offset: 0 });
    if (req.url.startsWith("/v1/faxes/multiple") || req.url.startsWith("/v1/fax/resend"))
      return json(res, 200, { success: [{ messageId: "m", status: "processing" }], errors: [] });
    return json(res, 200, { messageId: "m", status: "processing" });
  });
});

const only = () => {
  expect(stub.requests).toHaveLength(1);
  return stub.requests[0]!;
};

describe("headers and URLs", () => {
  it("sends Authorization: Basic <key> on every call", async () => {
    await client().faxInfo("m1");
    expect(only().headers.authorization).toBe("Basic shape-key");
  });
  it("keeps a path prefix of the base URL and encodes ids", async () => {
    await client("a", `${stub.baseUrl}/svc/`).faxInfo("a/b c");
    expect(only().url).toBe("/svc/v1/fax/a%2Fb%20c/info");
  });
  it("refuses a base URL that is not https at construction", () => {
    for (const url of ["http://127.0.0.1:1", "ftp://x", "not a url"]) {
      let caught: unknown;
      try {
        new FaxClient({ baseUrl: url, apiKey: "k" });
      } catch (err) {
        caught = err;
      }
      expect(isFaxgateError(caught, "API_INSECURE_URL")).toBe(true);
    }
  });
});

describe.each(["a", "b"] as const)("variant %s request shapes", (variant) => {
  it("api key access level", async () => {
    await client(variant).createApiKey({
      name: "gw",
      userId: "u1",
      access: "print_driver",
      expiresAt: "2027-01-01T00:00:00Z",
    });
    const f = formOf(only());
    expect(only().headers["content-type"]).toContain("application/x-www-form-urlencoded");
    expect(f).toMatchObject({ name: "gw", userId: "u1", expiresAt: "2027-01-01T00:00:00Z" });
    if (variant === "a") {
      expect(f.accessLevel).toBe('{"base":false,"admin":false,"print_driver":true}');
      expect(f.access).toBeUndefined();
    } else {
      expect(f.access).toBe("print_driver");
      expect(f.accessLevel).toBeUndefined();
    }
  });
  it("history include(s), tags and filters", async () => {
    await client(variant).history({
      limit: 10,
      offset: 20,
      status: "failed",
      include: ["tags", "contacts"],
      tags: ["t1", "t2"],
      isArchived: false,
    });
    const q = new URL(only().url, "https://x").searchParams;
    expect(q.get(variant === "a" ? "includes" : "include")).toBe("tags,contacts");
    expect(q.get(variant === "a" ? "include" : "includes")).toBeNull();
    expect(Object.fromEntries(q)).toMatchObject({
      limit: "10",
      offset: "20",
      status: "failed",
      tags: "t1,t2",
      isArchived: "false",
    });
  });
});

describe("fax bodies", () => {
  it("a send with files is multipart: fields, cf as JSON text, tags joined, files in order", async () => {
    await client().sendFax({
      faxNumber: "+15551230001",
      files: [
        { path: path.join(dir, "a.pdf"), contentType: "application/pdf" },
        { path: path.join(dir, "b.txt"), name: "notes.txt", contentType: "text/plain" },
      ],
      subject: "Hello",
      tags: ["t1", "t2"],
      cf: { job: "42", dept: "x" },
      coverPage: false,
    });
    const r = only();
    expect(r.url).toBe("/v1/faxes");
    const parts = multipartOf(r);
    const field = (n: string) => parts.find((p) => p.name === n)?.value;
    expect(field("faxNumber")).toBe("+15551230001");
    expect(field("subject")).toBe("Hello");
    expect(field("tags")).toBe("t1,t2");
    expect(JSON.parse(field("cf")!)).toEqual({ job: "42", dept: "x" });
    expect(field("coverPage")).toBe("false");
    const files = parts.filter((p) => p.name === "attachments");
    expect(files.map((f) => [f.filename, f.type, f.value])).toEqual([
      ["a.pdf", "application/pdf", "%PDF-1.4 first\n"],
      ["notes.txt", "text/plain", "second file\n"],
    ]);
  });
  it("a cover-only send is a plain form", async () => {
    await client().sendFax({ faxNumber: "+15551230001", coverPage: true, notes: "n" });
    expect(only().headers["content-type"]).toContain("application/x-www-form-urlencoded");
    expect(formOf(only())).toMatchObject({ faxNumber: "+15551230001", coverPage: "true", notes: "n" });
  });
  it("send-to-many joins recipients and contacts with commas", async () => {
    await client().sendFaxToMany({
      recipientFax: ["+15551230001", "+15551230002"],
      recipientContacts: ["c1", "c2"],
      coverPage: true,
    });
    expect(only().url).toBe("/v1/faxes/multiple");
    expect(formOf(only())).toMatchObject({ recipientFax: "+15551230001,+15551230002", recipientContacts: "c1,c2" });
  });
  it("resend and archive are plain forms", async () => {
    await client().resendFax("m1", "+15551230009");
    expect(formOf(stub.requests[0]!)).toEqual({ messageId: "m1", recipientFax: "+15551230009" });
    await client().updateFax("m1", { isArchived: true });
    expect(stub.requests[1]!.method).toBe("PATCH");
    expect(formOf(stub.requests[1]!)).toEqual({ isArchived: "true" });
  });
});

describe("contacts", () => {
  it("create puts userId in the query and fields in the form", async () => {
    await client().createContact({ name: "Acme", faxNumber: "(555) 010-0100", isPublic: true }, "u2");
    expect(only().url).toBe("/v1/contacts?userId=u2");
    expect(formOf(only())).toEqual({ name: "Acme", faxNumber: "(555) 010-0100", isPublic: "true" });
  });
  it("bulk delete sends contactIds", async () => {
    await client().deleteContacts(["c1", "c2"]);
    expect(only().method).toBe("DELETE");
    expect(only().url).toBe("/v1/contacts/bulk?contactIds=c1%2Cc2");
  });
});

describe("limits, checked before any request", () => {
  const cases: Array<[string, number, (v: string) => Promise<unknown>]> = [
    ["name", 128, (v) => client().createApiKey({ name: v, userId: "u", access: "base" })],
    ["name", 128, (v) => client().updateApiKey("k", { name: v })],
    ["recipientName", 40, (v) => client().sendFax({ faxNumber: "+15551230001", coverPage: true, recipientName: v })],
    ["senderName", 40, (v) => client().sendFax({ faxNumber: "+15551230001", coverPage: true, senderName: v })],
    ["subject", 55, (v) => client().sendFaxToMany({ recipientFax: ["+15551230001"], coverPage: true, subject: v })],
    [
      "callerId",
      10,
      (v) => client().sendFax({ faxNumber: "+15551230001", coverPage: true, callerId: "5".repeat(v.length) }),
    ],
    ["notes", 4000, (v) => client().sendFaxToMany({ recipientFax: ["+15551230001"], coverPage: true, notes: v })],
  ];
  it.each(cases)("%s: %i characters go out, one more is refused", async (field, max, call) => {
    await call("é".repeat(max));
    expect(stub.requests).toHaveLength(1);
    const err = await call("é".repeat(max + 1)).catch((e: unknown) => e);
    expect(isFaxgateError(err, "API_LIMIT")).toBe(true);
    expect((err as { field?: string }).field).toBe(field);
    expect((err as Error).message).toContain(field);
    expect((err as Error).message).toContain(String(max));
    expect(stub.requests).toHaveLength(1);
    expect(calls).toHaveLength(1);
  });
  it("history limit: 500 goes out, 501 is refused", async () => {
    await client().history({ limit: 500 });
    const err = await client()
      .history({ limit: 501 })
      .catch((e: unknown) => e);
    expect(isFaxgateError(err, "API_LIMIT")).toBe(true);
    expect((err as { field?: string }).field).toBe("limit");
    expect(stub.requests).toHaveLength(1);
  });
  it("missing required fields are refused as invalid input", async () => {
    const attempts: Array<() => Promise<unknown>> = [
      () => client().sendFax({ faxNumber: "", coverPage: true }),
      () => client().sendFax({ faxNumber: "+15551230001" }),
      () => client().sendFaxToMany({ recipientFax: [], coverPage: true }),
      () =>
        client().sendFax({
          faxNumber: "+15551230001",
          files: [{ path: path.join(dir, "missing.pdf"), contentType: "application/pdf" }],
        }),
      () => client().resendFax(""),
      () => client().createApiKey({ name: "n", userId: "", access: "base" }),
      () => client().createContact({}),
      () => client().deleteContacts([]),
      () => client().faxInfo(""),
    ];
    for (const attempt of attempts) {
      const err = await attempt().catch((e: unknown) => e);
      expect(isFaxgateError(err, "API_INVALID_INPUT")).toBe(true);
    }
    expect(stub.requests).toHaveLength(0);
    expect(calls).toHaveLength(0);
  });
});
