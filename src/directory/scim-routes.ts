// /scim/v2/Users and /scim/v2/Groups (RFC 7644) on the console's listener: a fastify plugin the
// console registers under /scim/v2 when directory.scim is set. Every request carries the bearer
// token of directory.scim.token (compared in constant time); bodies are application/scim+json
// (or application/json); errors are SCIM error messages (RFC 7644 §3.12).
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { DirectoryKind } from "../store/index.js";
import { type ScimDirectory, ScimError } from "./scim-directory.js";
import type { PatchOp } from "./scim-patch.js";

const LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
const ERROR = "urn:ietf:params:scim:api:messages:2.0:Error";
const PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const SCIM_TYPE = "application/scim+json; charset=utf-8";

type Json = Record<string, unknown>;

export interface ScimRoutesOptions {
  scim: ScimDirectory;
  token: string;
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function scimRoutes(app: FastifyInstance, opts: ScimRoutesOptions): Promise<void> {
  scimWire(app, opts.token);
  resourceRoutes(app, opts.scim, "Users", "user");
  resourceRoutes(app, opts.scim, "Groups", "group");
  app.get("/ServiceProviderConfig", async (_req, reply) => send(reply, 200, SERVICE_PROVIDER_CONFIG));
}

/** What every SCIM request meets first: its body type, the bearer token, errors as SCIM errors. */
function scimWire(app: FastifyInstance, token: string): void {
  app.addContentTypeParser(["application/scim+json"], { parseAs: "string" }, (_req, body, done) => {
    try {
      // a DELETE or GET may carry the content type and no body
      done(null, String(body).trim() === "" ? undefined : JSON.parse(String(body)));
    } catch {
      done(new ScimError(400, "the body is not JSON", "invalidSyntax"), undefined);
    }
  });
  app.addHook("onRequest", async (req, reply) => {
    const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "");
    if (!m || !sameToken(m[1]!.trim(), token)) {
      reply.header("www-authenticate", 'Bearer realm="faxgate SCIM"');
      return send(reply, 401, { schemas: [ERROR], status: "401", detail: "a valid bearer token is required" });
    }
  });
  app.setErrorHandler((err, _req, reply) => {
    const status = err instanceof ScimError ? (err.httpStatus ?? 400) : (err as { statusCode?: number }).statusCode;
    const code = status && status >= 400 && status < 500 ? status : 500;
    const body: Json = {
      schemas: [ERROR],
      status: String(code),
      detail: code === 500 ? "internal error" : (err as Error).message,
    };
    if (err instanceof ScimError && err.scimType) body.scimType = err.scimType;
    return send(reply, code, body);
  });
}

/** /Users or /Groups: list (filter, paging), get, create, replace, patch, delete. */
function resourceRoutes(app: FastifyInstance, scim: ScimDirectory, path: string, kind: DirectoryKind): void {
  const base = (req: FastifyRequest) => `${req.protocol}://${req.host}/scim/v2`;
  const shown = (req: FastifyRequest, e: Parameters<ScimDirectory["resource"]>[0]) => {
    const r = scim.resource(e, base(req));
    const excluded = String((req.query as Json).excludedAttributes ?? "")
      .split(",")
      .map((a) => a.trim().toLowerCase());
    if (excluded.includes("members")) delete r.members;
    return r;
  };
  const id = (req: FastifyRequest) => (req.params as { id: string }).id;
  app.get(`/${path}`, async (req, reply) => {
    const q = req.query as Json;
    const all = await scim.list(kind, typeof q.filter === "string" ? q.filter : undefined);
    const startIndex = Math.max(1, Number(q.startIndex ?? 1) || 1);
    const count = q.count === undefined ? all.length : Math.max(0, Number(q.count) || 0);
    const page = all.slice(startIndex - 1, startIndex - 1 + count);
    return send(reply, 200, {
      schemas: [LIST],
      totalResults: all.length,
      startIndex,
      itemsPerPage: page.length,
      Resources: page.map((e) => shown(req, e)),
    });
  });
  app.get(`/${path}/:id`, async (req, reply) => send(reply, 200, shown(req, await scim.get(kind, id(req)))));
  app.post(`/${path}`, async (req, reply) => {
    const r = shown(req, await scim.create(kind, body(req)));
    reply.header("location", (r.meta as Json).location as string);
    return send(reply, 201, r);
  });
  app.put(`/${path}/:id`, async (req, reply) =>
    send(reply, 200, shown(req, await scim.replace(kind, id(req), body(req)))),
  );
  app.patch(`/${path}/:id`, async (req, reply) => {
    const b = body(req);
    const ops = (b.Operations ?? b.operations) as PatchOp[] | undefined;
    if (!Array.isArray(ops)) throw new ScimError(400, `a PATCH body is a ${PATCH} with Operations`, "invalidSyntax");
    return send(reply, 200, shown(req, await scim.patch(kind, id(req), ops)));
  });
  app.delete(`/${path}/:id`, async (req, reply) => {
    await scim.remove(kind, id(req));
    return reply.code(204).send();
  });
}

const SERVICE_PROVIDER_CONFIG: Json = {
  schemas: ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
  patch: { supported: true },
  bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
  filter: { supported: true, maxResults: 1000 },
  changePassword: { supported: false },
  sort: { supported: false },
  etag: { supported: false },
  authenticationSchemes: [
    { type: "oauthbearertoken", name: "Bearer token", description: "directory.scim.token", primary: true },
  ],
};

function body(req: FastifyRequest): Json {
  if (typeof req.body !== "object" || req.body === null || Array.isArray(req.body))
    throw new ScimError(400, "the body must be a JSON object", "invalidSyntax");
  return req.body as Json;
}

function send(reply: FastifyReply, status: number, payload: Json): FastifyReply {
  return reply.code(status).header("content-type", SCIM_TYPE).send(JSON.stringify(payload));
}
