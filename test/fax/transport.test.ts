// Failures the emulator cannot stage, against a bare HTTPS server: how each one is typed decides
// whether the dispatcher retries, waits, reconciles or gives up.
import { createServer } from "node:net";
import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createFaxAgent, FaxApiError, FaxClient } from "../../src/fax/client.js";
import { createLogger } from "../../src/log/logger.js";
import { json, startStub, type StubServer } from "./stub-server.js";
import { tempFolder } from "../tmp-dir.js";

const KEY = "sekrit-key-9f8e7d";
let stub: StubServer;
let agent: ReturnType<typeof createFaxAgent>;
let dir: string;
let observed: Array<[string, string]>;
let logText: string;

const client = (opts: Partial<ConstructorParameters<typeof FaxClient>[0]> = {}) => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logText += String(chunk);
      cb();
    },
  });
  return new FaxClient({
    baseUrl: stub.baseUrl,
    apiKey: KEY,
    dispatcher: agent,
    timeoutMs: 2000,
    observer: (op, status) => observed.push([op, status]),
    logger: createLogger({ level: "debug", destination: sink }),
    ...opts,
  });
};

async function failure(p: Promise<unknown>): Promise<FaxApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FaxApiError);
  const e = err as FaxApiError;
  // Never the key, whatever went wrong.
  expect(e.message).not.toContain(KEY);
  return e;
}

const send = (c: FaxClient) => c.sendFax({ faxNumber: "+15551230001", coverPage: true });

beforeAll(async () => {
  stub = await startStub();
  agent = createFaxAgent({ ca: stub.caPem, timeoutMs: 2000 });
  dir = tempFolder("test");
});
afterAll(async () => {
  await agent.close();
  await stub.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  observed = [];
  logText = "";
  stub.requests.length = 0;
});

describe("answers with an error status", () => {
  it("401 is permanent API_AUTH with the service error kind and message", async () => {
    stub.handle((_r, res) => json(res, 401, { error: { name: "AuthenticationError", message: "Invalid API key" } }));
    const e = await failure(client().me());
    expect(e).toMatchObject({
      code: "API_AUTH",
      status: 401,
      temporary: false,
      outcomeUnknown: false,
      serviceName: "AuthenticationError",
      serviceMessage: "Invalid API key",
    });
    expect(e.message).toContain("me GET /v1/me");
    expect(observed).toEqual([["me", "401"]]);
  });
  it("429 carries Retry-After as seconds or as an HTTP-date", async () => {
    stub.handle((_r, res) =>
      json(res, 429, { error: { name: "TooManyRequests", message: "slow down" } }, { "retry-after": "3" }),
    );
    expect(await failure(client().history())).toMatchObject({
      code: "API_RATE_LIMITED",
      temporary: true,
      retryAfterMs: 3000,
    });
    const now = Date.parse("2026-11-21T12:00:00Z");
    stub.handle((_r, res) => json(res, 429, {}, { "retry-after": "Sat, 21 Nov 2026 12:00:45 GMT" }));
    expect(await failure(client({ now: () => now }).history())).toMatchObject({ retryAfterMs: 45_000 });
  });
  it("a 503 on a send is temporary and known not to have happened; a 504 may have happened", async () => {
    stub.handle((_r, res) => res.writeHead(503).end("busy"));
    expect(await failure(send(client()))).toMatchObject({ code: "API_SERVER", temporary: true, outcomeUnknown: false });
    stub.handle((_r, res) => res.writeHead(504).end("<html>gateway timeout</html>"));
    expect(await failure(send(client()))).toMatchObject({ code: "API_SERVER", temporary: true, outcomeUnknown: true });
    expect(await failure(client().faxInfo("m"))).toMatchObject({ code: "API_SERVER", outcomeUnknown: false });
  });
  it("other 4xx are permanent", async () => {
    stub.handle((_r, res) => json(res, 413, { error: { name: "PayloadTooLarge", message: "too big" } }));
    expect(await failure(send(client()))).toMatchObject({ code: "API_TOO_LARGE", temporary: false });
    stub.handle((_r, res) => json(res, 409, {}));
    expect(await failure(send(client()))).toMatchObject({ code: "API_REJECTED", temporary: false, status: 409 });
  });
  it("a huge error body is read only in part and the connection stays usable", async () => {
    stub.handle((_r, res) => res.writeHead(500, { "content-type": "text/plain" }).end("x".repeat(2_000_000)));
    expect(await failure(client().faxInfo("m"))).toMatchObject({ code: "API_SERVER" });
    stub.handle((_r, res) => json(res, 200, { messageId: "m", status: "success" }));
    expect((await client().faxInfo("m")).messageId).toBe("m");
  });
});

describe("failures without an answer", () => {
  it("a connection dropped after a send reached the service leaves its outcome unknown", async () => {
    stub.handle((_r, res) => res.socket?.destroy());
    const e = await failure(send(client()));
    expect(e).toMatchObject({ code: "API_OUTCOME_UNKNOWN", temporary: true, outcomeUnknown: true });
    expect(stub.requests).toHaveLength(1);
    expect(observed).toEqual([["sendFax", "API_OUTCOME_UNKNOWN"]]);
  });
  it("the same drop on a read is plain temporary", async () => {
    stub.handle((_r, res) => res.socket?.destroy());
    expect(await failure(client().history())).toMatchObject({
      code: "API_NETWORK",
      temporary: true,
      outcomeUnknown: false,
    });
  });
  it("no answer in time: unknown for a send, API_TIMEOUT for a read", async () => {
    stub.handle(() => undefined);
    expect(await failure(send(client({ timeoutMs: 300 })))).toMatchObject({
      code: "API_OUTCOME_UNKNOWN",
      outcomeUnknown: true,
    });
    expect(await failure(client({ timeoutMs: 300 }).me())).toMatchObject({
      code: "API_TIMEOUT",
      temporary: true,
      outcomeUnknown: false,
    });
  });
  it("a 2xx whose body cannot be read as a fax record is an unknown outcome for a send", async () => {
    stub.handle((_r, res) => res.writeHead(200, { "content-type": "application/json" }).end('{"oops"'));
    expect(await failure(send(client()))).toMatchObject({
      code: "API_OUTCOME_UNKNOWN",
      outcomeUnknown: true,
      status: 200,
    });
    expect(await failure(client().me())).toMatchObject({ code: "API_BAD_RESPONSE", outcomeUnknown: false });
  });
  it("ECONNREFUSED is API_NETWORK, never unknown, even for a send", async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const port = (srv.address() as { port: number }).port;
    await new Promise<void>((r) => srv.close(() => r()));
    const e = await failure(send(client({ baseUrl: `https://127.0.0.1:${port}` })));
    expect(e).toMatchObject({ code: "API_NETWORK", temporary: true, outcomeUnknown: false });
    expect(observed).toEqual([["sendFax", "API_NETWORK"]]);
  });
  it("an untrusted certificate fails the handshake: API_NETWORK, not unknown", async () => {
    const untrusting = createFaxAgent({ timeoutMs: 2000 });
    try {
      stub.handle((_r, res) => json(res, 200, { messageId: "m", status: "processing" }));
      const e = await failure(send(client({ dispatcher: untrusting })));
      expect(e).toMatchObject({ code: "API_NETWORK", outcomeUnknown: false });
      expect(stub.requests).toHaveLength(0);
    } finally {
      await untrusting.close();
    }
  });
  it("a client without a shared agent trusts its own CA and closes its own agent", async () => {
    stub.handle((_r, res) => json(res, 200, { status: "ok" }));
    const own = client({ dispatcher: undefined, ca: stub.caPem });
    expect(await own.ping()).toEqual({ status: "ok" });
    await own.close();
  });
});

describe("downloads", () => {
  it("streams to the file, takes the name from Content-Disposition, leaves no temp file", async () => {
    const pdf = Buffer.from(`%PDF-1.4\n${"x".repeat(100_000)}\n%%EOF\n`);
    stub.handle((_r, res) =>
      res
        .writeHead(200, {
          "content-type": "application/pdf",
          "content-length": String(pdf.length),
          "content-disposition": 'attachment; filename="fax-m1.pdf"',
        })
        .end(pdf),
    );
    const dest = path.join(dir, "one.pdf");
    expect(await client().downloadFax("m1", dest)).toEqual({ bytes: pdf.length, fileName: "fax-m1.pdf" });
    expect((await readFile(dest)).equals(pdf)).toBe(true);
    expect((await readdir(dir)).filter((f) => f.endsWith(".part"))).toEqual([]);
  });
  it("a truncated download fails and leaves neither the file nor a temp file", async () => {
    stub.handle((_r, res) => {
      res.writeHead(200, { "content-type": "application/pdf", "content-length": "5000" });
      res.write("%PDF-1.4 only part");
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const dest = path.join(dir, "cut.pdf");
    const e = await failure(client().downloadFax("m1", dest));
    expect(e.temporary).toBe(true);
    expect(e.outcomeUnknown).toBe(false);
    expect((await readdir(dir)).filter((f) => f.startsWith("cut.pdf") || f.startsWith(".cut.pdf"))).toEqual([]);
  });
  it("a 404 leaves no file behind", async () => {
    stub.handle((_r, res) => json(res, 404, { error: { name: "NotFoundError", message: "no such fax" } }));
    const e = await failure(client().downloadFax("nope", path.join(dir, "none.pdf")));
    expect(e).toMatchObject({ code: "API_NOT_FOUND", temporary: false });
    expect((await readdir(dir)).some((f) => f.includes("none.pdf"))).toBe(false);
  });
});

describe("secrets", () => {
  it("the key appears in no log line and no error, whatever happens", async () => {
    stub.handle((r, res) => json(res, 400, { error: { name: "InvalidInputError", message: `bad request ${r.url}` } }));
    await failure(client().history({ query: "x" }));
    stub.handle((_r, res) => res.socket?.destroy());
    await failure(send(client()));
    stub.handle((_r, res) => json(res, 200, { userId: "u", email: "a@b" }));
    await client().me();
    expect(logText).toContain("api call");
    expect(logText).not.toContain(KEY);
    expect(logText.toLowerCase()).not.toContain("basic ");
  });
});

describe("trust", () => {
  it("an extra CA from a file is trusted in addition to the system roots", async () => {
    const { trustedCas } = await import("../../src/fax/agent.js");
    const tls = await import("node:tls");
    const caFile = path.join(dir, "ca.pem");
    await (await import("node:fs/promises")).writeFile(caFile, stub.caPem);
    const cas = trustedCas({ caFile })!;
    expect(cas).toHaveLength(tls.rootCertificates.length + 1);
    expect(cas.at(-1)).toBe(stub.caPem);
    expect(trustedCas({})).toBeUndefined();
    const fileAgent = createFaxAgent({ caFile });
    try {
      stub.handle((_r, res) => json(res, 200, { status: "ok" }));
      expect(await client({ dispatcher: fileAgent }).ping()).toEqual({ status: "ok" });
    } finally {
      await fileAgent.close();
    }
  });
  it("an unreadable CA file is a config error naming the key, not a crash later", () => {
    expect(() => createFaxAgent({ caFile: path.join(dir, "missing.pem") })).toThrow(/api\.caFile|CA file/);
  });
});
