// A Microsoft Graph peer over real HTTPS, as Graph documents its behaviour: the identity
// platform's client-credentials token endpoint (POST /{tenant}/oauth2/v2.0/token), and a drive's
// items by path: GET /drives/{id}/root:/{path} (404 when absent), GET .../content (a 302 to a
// pre-authenticated download URL), PUT .../content (201; with
// @microsoft.graph.conflictBehavior=fail a name in use is 409 nameAlreadyExists, without it the
// file is replaced), POST .../createUploadSession and PUTs of its fragments with Content-Range
// (multiples of 320 KiB, no Authorization header: the URL is pre-authenticated).
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { localCert } from "./tls-cert.js";

export interface GraphPeer {
  /** https://127.0.0.1:port/v1.0 */
  graphUrl: string;
  /** https://127.0.0.1:port/{tenant}/oauth2/v2.0/token */
  tokenUrl(tenant: string): string;
  /** the files of each drive, by path */
  files: Map<string, Buffer>;
  /** what was asked, in order ("PUT drive/path", "token", "fragment 0-3276799/5000000") */
  calls: string[];
  close(): Promise<void>;
}

const FRAGMENT_UNIT = 320 * 1024;

export async function graphServer(client: { id: string; secret: string }): Promise<GraphPeer> {
  const { key, cert } = await localCert();
  const files = new Map<string, Buffer>();
  const calls: string[] = [];
  const tokens = new Set<string>();
  const downloads = new Map<string, string>();
  const sessions = new Map<string, { file: string; fail: boolean; parts: Buffer[]; size: number }>();
  let origin = "";

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const graphError = (res: ServerResponse, status: number, code: string) =>
    json(res, status, { error: { code, message: code } });

  const server = https.createServer({ key, cert }, async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", origin);
    const path = decodeURIComponent(url.pathname);

    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
    if (token && req.method === "POST") {
      const form = new URLSearchParams(body.toString());
      calls.push("token");
      if (form.get("grant_type") !== "client_credentials" || !form.get("scope")?.endsWith("/.default"))
        return json(res, 400, { error: "invalid_request" });
      if (form.get("client_id") !== client.id || form.get("client_secret") !== client.secret)
        return json(res, 401, { error: "invalid_client" });
      const t = randomBytes(16).toString("hex");
      tokens.add(t);
      return json(res, 200, { token_type: "Bearer", expires_in: 3599, access_token: t });
    }

    const dl = /^\/download\/([a-f0-9]+)$/.exec(path);
    if (dl && req.method === "GET") {
      const file = downloads.get(dl[1]!);
      const data = file ? files.get(file) : undefined;
      if (!data) return graphError(res, 404, "itemNotFound");
      return res.writeHead(200, { "content-type": "application/octet-stream" }).end(data);
    }

    const up = /^\/upload\/([a-f0-9]+)$/.exec(path);
    if (up && req.method === "PUT") {
      const s = sessions.get(up[1]!);
      if (!s) return graphError(res, 404, "itemNotFound");
      if (req.headers.authorization) return graphError(res, 401, "unauthenticated");
      const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(req.headers["content-range"] ?? ""));
      const got = s.parts.reduce((n, p) => n + p.length, 0);
      if (!range || Number(range[1]) !== got || Number(range[2]) - Number(range[1]) + 1 !== body.length)
        return graphError(res, 416, "invalidRange");
      s.size = Number(range[3]);
      const last = Number(range[2]) + 1 === s.size;
      if (!last && body.length % FRAGMENT_UNIT !== 0) return graphError(res, 400, "invalidRequest");
      calls.push(`fragment ${range[1]}-${range[2]}/${range[3]}`);
      s.parts.push(body);
      if (!last) return json(res, 202, { nextExpectedRanges: [`${got + body.length}-`] });
      sessions.delete(up[1]!);
      if (s.fail && files.has(s.file)) return graphError(res, 409, "nameAlreadyExists");
      files.set(s.file, Buffer.concat(s.parts));
      return json(res, 201, { name: s.file.split("/").pop(), size: s.size });
    }

    const item = /^\/v1\.0\/drives\/([^/]+)\/root:\/(.+?)(?::\/(content|createUploadSession))?$/.exec(path);
    if (!item) return graphError(res, 400, "invalidRequest");
    if (!tokens.has(String(req.headers.authorization ?? "").replace(/^Bearer /, "")))
      return graphError(res, 401, "InvalidAuthenticationToken");
    const file = `${item[1]}/${item[2]}`;
    const what = item[3] ?? "item";
    calls.push(`${req.method} ${what} ${file}`);
    if (what === "item" && req.method === "GET") {
      if (!files.has(file)) return graphError(res, 404, "itemNotFound");
      return json(res, 200, { name: file.split("/").pop(), size: files.get(file)!.length });
    }
    if (what === "content" && req.method === "GET") {
      if (!files.has(file)) return graphError(res, 404, "itemNotFound");
      const id = randomBytes(8).toString("hex");
      downloads.set(id, file);
      return res.writeHead(302, { location: `${origin}/download/${id}` }).end();
    }
    if (what === "content" && req.method === "PUT") {
      if (body.length > 4 * 1024 * 1024) return graphError(res, 413, "requestTooLarge");
      const fail = url.searchParams.get("@microsoft.graph.conflictBehavior") === "fail";
      if (fail && files.has(file)) return graphError(res, 409, "nameAlreadyExists");
      const existed = files.has(file);
      files.set(file, body);
      return json(res, existed ? 200 : 201, { name: file.split("/").pop(), size: body.length });
    }
    if (what === "createUploadSession" && req.method === "POST") {
      const asked = JSON.parse(body.toString() || "{}") as { item?: Record<string, unknown> };
      const fail = asked.item?.["@microsoft.graph.conflictBehavior"] === "fail";
      if (fail && files.has(file)) return graphError(res, 409, "nameAlreadyExists");
      const id = randomBytes(8).toString("hex");
      sessions.set(id, { file, fail, parts: [], size: 0 });
      return json(res, 200, { uploadUrl: `${origin}/upload/${id}`, expirationDateTime: "2099-01-01T00:00:00Z" });
    }
    return graphError(res, 405, "invalidRequest");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    graphUrl: `${origin}/v1.0`,
    tokenUrl: (tenant) => `${origin}/${tenant}/oauth2/v2.0/token`,
    files,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
