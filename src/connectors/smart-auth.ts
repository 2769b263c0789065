// SMART Backend Services (HL7 SMART App Launch 2, "client-confidential-asymmetric"): the gateway
// asks the EHR's token endpoint for an access token with client_credentials, proving itself with
// a short JWT signed by its private key (jose), and keeps the token until shortly before it ends.
// Plain bearer: a token from the secrets file, sent as it is.
import { randomUUID } from "node:crypto";
import { importPKCS8, SignJWT } from "jose";
import type { FhirDelivery } from "../config/index.js";
import type { HttpsPeer } from "./https-call.js";
import { refused, unavailable } from "./problem.js";
import type { SecretReader } from "./secrets.js";

interface Held {
  token: string;
  until: number;
}

/** Tokens of each SMART client, shared by every delivery of the gateway (one per tokenUrl and client). */
export class SmartTokens {
  private readonly held = new Map<string, Held>();

  constructor(private readonly now: () => number) {}

  /** The Authorization header's value for one FHIR connector. */
  async authorization(auth: FhirDelivery["auth"], secret: SecretReader, peer: HttpsPeer): Promise<string> {
    if ("bearer" in auth) return `Bearer ${secret(auth.bearer.tokenSecret)}`;
    const s = auth.smart;
    const key = `${s.tokenUrl} ${s.clientId}`;
    const h = this.held.get(key);
    if (h && h.until > this.now()) return `Bearer ${h.token}`;
    const assertion = await this.assertion(s, secret);
    const res = await peer
      .call(s.tokenUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          scope: s.scope,
          client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
          client_assertion: assertion,
        }).toString(),
      })
      .catch((err: Error) => {
        throw (err as { temporary?: boolean }).temporary
          ? unavailable(`the token endpoint: ${err.message}`, err)
          : refused(`the token endpoint: ${err.message}`, err);
      });
    let body: { access_token?: unknown; expires_in?: unknown };
    try {
      body = JSON.parse(res.body) as typeof body;
    } catch {
      throw refused("the token endpoint answered something that is not JSON");
    }
    if (typeof body.access_token !== "string" || !body.access_token)
      throw refused("the token endpoint gave no access_token");
    const life = typeof body.expires_in === "number" ? body.expires_in : 300;
    // renewed a minute early, so a token never runs out mid-delivery
    this.held.set(key, { token: body.access_token, until: this.now() + Math.max(0, life - 60) * 1000 });
    return `Bearer ${body.access_token}`;
  }

  forget(auth: FhirDelivery["auth"]): void {
    if ("smart" in auth) this.held.delete(`${auth.smart.tokenUrl} ${auth.smart.clientId}`);
  }

  private async assertion(s: Extract<FhirDelivery["auth"], { smart: unknown }>["smart"], secret: SecretReader) {
    let key: Awaited<ReturnType<typeof importPKCS8>>;
    try {
      key = await importPKCS8(secret(s.keySecret), s.alg);
    } catch (err) {
      if ((err as { code?: string }).code === "CONNECTOR_REFUSED") throw err;
      throw refused(`the secret ${s.keySecret} is not a PKCS#8 PEM private key for ${s.alg}`, err);
    }
    const now = Math.floor(this.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: s.alg, typ: "JWT", ...(s.keyId ? { kid: s.keyId } : {}) })
      .setIssuer(s.clientId)
      .setSubject(s.clientId)
      .setAudience(s.tokenUrl)
      .setJti(randomUUID())
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(key);
  }
}
