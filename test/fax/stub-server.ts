// A bare HTTPS server for the transport cases the emulator cannot stage (a header timeout, a 502,
// an HTTP-date Retry-After, an untrusted certificate) and for proving the exact request shapes the
// client sends (the emulator accepts both variants, so only a recorder can show which went out).
import { once } from "node:events";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";
import { localCert } from "../helpers/tls-cert.js";

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

export type StubHandler = (req: Recorded, res: ServerResponse) => unknown;

export interface StubServer {
  baseUrl: string;
  caPem: string;
  requests: Recorded[];
  handle(h: StubHandler): void;
  close(): Promise<void>;
}

export async function startStub(opts: { record?: boolean } = {}): Promise<StubServer> {
  const { key, cert: pem } = await localCert();
  const requests: Recorded[] = [];
  let handler: StubHandler = (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  };
  const server = https.createServer({ key, cert: pem }, (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      // Big uploads are counted, not kept (the streaming test sends 50 MB).
      if (opts.record !== false && size < 1_000_000) chunks.push(c);
    });
    req.on("end", () => {
      const rec: Recorded = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      (rec as Recorded & { size: number }).size = size;
      requests.push(rec);
      Promise.resolve(handler(rec, res)).catch((err: unknown) => {
        res.destroy(err as Error);
      });
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `https://127.0.0.1:${port}`,
    caPem: pem,
    requests,
    handle(h) {
      handler = h;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

/** The fields of a urlencoded body. */
export function formOf(r: Recorded): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(r.body.toString("utf8")));
}

/** The named parts of a multipart body (file parts as {filename, type, size}). */
export function multipartOf(r: Recorded): Array<{ name: string; filename?: string; type?: string; value: string }> {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/.exec(String(r.headers["content-type"]));
  if (!m) throw new Error("not multipart");
  const boundary = `--${m[1] ?? m[2]}`;
  const text = r.body.toString("latin1");
  const parts = text.split(boundary).slice(1, -1);
  return parts.map((p) => {
    const [head, ...rest] = p.replace(/^\r\n/, "").split("\r\n\r\n");
    const value = rest.join("\r\n\r\n").replace(/\r\n$/, "");
    const name = /name="([^"]*)"/.exec(head!)?.[1] ?? "";
    const filename = /filename="([^"]*)"/.exec(head!)?.[1];
    const type = /content-type:\s*(.+)/i.exec(head!)?.[1]?.trim();
    return { name, filename, type, value };
  });
}
