// RFC 3161 time-stamps of a manifest: the request (TimeStampReq) sent to the configured authority,
// and the check of its token (a CMS SignedData over a TSTInfo), both through pkijs and asn1js.
// The check needs no network: the token carries the authority's certificate, so a bundle's token
// is checked offline (with the authority's CA, when given, the chain too).
import { createHash, randomBytes } from "node:crypto";
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { Agent, request } from "undici";
import { maskUrl } from "../config/index.js";
import { FaxgateError } from "../errors.js";

const SHA256_OID = "2.16.840.1.101.3.4.2.1";

export interface TsaSettings {
  url: string;
  /** extra trusted CA (PEM) for an https authority */
  ca?: string;
  timeoutMs: number;
}

export interface TokenCheck {
  ok: boolean;
  /** what failed, in words; absent when ok */
  why?: string;
  /** the authority's time (ISO), when the token could be read */
  genTime?: string;
  /** the signing certificate's subject, when present */
  signer?: string;
}

/** The DER of a TimeStampReq for a SHA-256 digest, asking for the authority's certificate. */
export function timestampRequest(digest: Uint8Array, nonce: Uint8Array): Uint8Array {
  const req = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: SHA256_OID }),
      hashedMessage: new asn1js.OctetString({ valueHex: copy(digest) }),
    }),
    nonce: new asn1js.Integer({ valueHex: copy(nonce) }),
    certReq: true,
  });
  return new Uint8Array(req.toSchema().toBER(false));
}

/**
 * Asks the authority for a token over `data` (its SHA-256); answers the token's DER (a ContentInfo),
 * checked: granted, for this data and nonce, and its signature whole. Every failure names the authority's
 * URL and what went wrong, and is temporary (another try may get one).
 */
export async function requestTimestamp(tsa: TsaSettings, data: Uint8Array): Promise<Uint8Array> {
  const digest = createHash("sha256").update(data).digest();
  // a positive INTEGER: the first byte's top bit clear
  const nonce = randomBytes(8);
  nonce[0] = (nonce[0]! & 0x7f) | 0x01;
  const body = timestampRequest(digest, nonce);
  const dispatcher = new Agent({
    connect: tsa.ca ? { ca: tsa.ca } : {},
    headersTimeout: tsa.timeoutMs,
    bodyTimeout: tsa.timeoutMs,
    connectTimeout: tsa.timeoutMs,
  });
  const fail = (what: string, cause?: unknown) =>
    // an authority's URL may carry a password (https://user:pass@tsa...): shown masked
    new FaxgateError("TIMESTAMP_UNAVAILABLE", `the time-stamp authority ${maskUrl(tsa.url)} ${what}`, { cause });
  let reply: Uint8Array;
  try {
    const res = await request(tsa.url, {
      method: "POST",
      body,
      headers: { "content-type": "application/timestamp-query", accept: "application/timestamp-reply" },
      dispatcher,
      signal: AbortSignal.timeout(tsa.timeoutMs),
    });
    reply = new Uint8Array(await res.body.arrayBuffer());
    if (res.statusCode !== 200) throw fail(`answered HTTP ${res.statusCode}`);
  } catch (err) {
    if (err instanceof FaxgateError) throw err;
    const e = err as { code?: string; name?: string; message?: string };
    throw fail(`could not be reached (${e.code ?? e.name ?? "error"}: ${e.message ?? ""})`, err);
  } finally {
    await dispatcher.close().catch(() => {});
  }
  let resp: pkijs.TimeStampResp;
  try {
    resp = pkijs.TimeStampResp.fromBER(copy(reply));
  } catch {
    throw fail("answered something that is not a TimeStampResp");
  }
  const status = resp.status.status;
  if (status !== pkijs.PKIStatus.granted && status !== pkijs.PKIStatus.grantedWithMods) {
    const text = resp.status.statusStrings?.map((s) => s.valueBlock.value).join("; ");
    throw fail(`refused the request (PKIStatus ${status}${text ? `: ${text}` : ""})`);
  }
  if (!resp.timeStampToken) throw fail("granted a time-stamp but sent no token");
  const token = new Uint8Array(resp.timeStampToken.toSchema().toBER(false));
  const check = await checkTimestamp(token, data, { nonce });
  if (!check.ok) throw fail(`sent a token that does not hold: ${check.why}`);
  return token;
}

/**
 * Checks a token (ContentInfo DER) against the data it should cover: a SignedData whose content is
 * a TSTInfo with the data's SHA-256 as imprint (and nonce, when given), signed by the certificate it carries;
 * with `trusted` CA certificates (PEM), that certificate must chain to one of them.
 */
export async function checkTimestamp(
  token: Uint8Array,
  data: Uint8Array,
  opts: { nonce?: Uint8Array; trusted?: string[] } = {},
): Promise<TokenCheck> {
  const digest = createHash("sha256").update(data).digest();
  let signed: pkijs.SignedData;
  let info: pkijs.TSTInfo;
  try {
    const content = pkijs.ContentInfo.fromBER(copy(token));
    if (content.contentType !== pkijs.ContentInfo.SIGNED_DATA)
      return { ok: false, why: "the token is not CMS SignedData" };
    signed = new pkijs.SignedData({ schema: content.content });
    const eContent = signed.encapContentInfo.eContent;
    if (!eContent) return { ok: false, why: "the token holds no TSTInfo" };
    info = pkijs.TSTInfo.fromBER(eContent.getValue());
  } catch (err) {
    return { ok: false, why: `the token cannot be read (${(err as Error).message})` };
  }
  const genTime = info.genTime.toISOString();
  const cert = signed.certificates?.find((c): c is pkijs.Certificate => c instanceof pkijs.Certificate);
  const signer = cert ? subjectOf(cert) : undefined;
  const base = { genTime, ...(signer ? { signer } : {}) };
  if (info.messageImprint.hashAlgorithm.algorithmId !== SHA256_OID)
    return { ...base, ok: false, why: "the token's imprint is not SHA-256" };
  const imprint = new Uint8Array(info.messageImprint.hashedMessage.valueBlock.valueHexView);
  if (!equalBytes(imprint, digest)) return { ...base, ok: false, why: "the token is for another manifest" };
  if (opts.nonce) {
    const got = info.nonce ? new Uint8Array(info.nonce.valueBlock.valueHexView) : null;
    if (!got || !equalBytes(got, opts.nonce)) return { ...base, ok: false, why: "the token's nonce is not ours" };
  }
  try {
    const trustedCerts = (opts.trusted ?? []).flatMap(certificatesOfPem);
    const ok = await signed.verify({
      signer: 0,
      checkChain: trustedCerts.length > 0,
      trustedCerts,
      // pkijs checks the TSTInfo's imprint against the data itself too
      data: copy(data),
      extendedMode: false,
    });
    if (!ok) return { ...base, ok: false, why: "the token's signature does not hold" };
  } catch (err) {
    const e = err as { message?: string; signatureVerified?: boolean | null };
    return { ...base, ok: false, why: `the token's signature does not hold (${e.message ?? "verify failed"})` };
  }
  return { ...base, ok: true };
}

function certificatesOfPem(pem: string): pkijs.Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => {
    const der = Buffer.from(b.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, ""), "base64");
    return pkijs.Certificate.fromBER(copy(der));
  });
}

function subjectOf(cert: pkijs.Certificate): string {
  return cert.subject.typesAndValues.map((tv) => `${shortName(tv.type)}=${tv.value.valueBlock.value}`).join(", ");
}

function shortName(oid: string): string {
  return ({ "2.5.4.3": "CN", "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.6": "C" } as Record<string, string>)[oid] ?? oid;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** An ArrayBuffer of exactly these bytes (a Buffer's may be a slice of a larger pool). */
function copy(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}
