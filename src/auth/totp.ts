// TOTP (RFC 6238) through otplib, the fallback second factor for a person without a passkey
// device. The secret is kept sealed (AES-256-GCM under a key derived from web.factors.key, from
// the secrets file), so a copy of the database alone gives no one the codes. A code is accepted
// one step either side of now (a phone's clock drifts), and only for a step after the last one
// accepted: the caller stores that step, so a code seen over a shoulder is worth nothing.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { generateSecret, generateURI, verify } from "otplib";

const PERIOD_S = 30;

export class TotpSealer {
  private readonly key: Buffer;

  /** `purpose` keeps each use's cipher key apart (keys/key-minter.ts seals API keys with "api-key"). */
  constructor(secretKey: string, purpose = "totp") {
    // the configured text may be any length; the cipher wants 32 bytes
    this.key = createHash("sha256").update(`faxgate ${purpose} seal\0${secretKey}`).digest();
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([c.update(secret, "utf8"), c.final()]);
    return `v1.${Buffer.concat([iv, c.getAuthTag(), body]).toString("base64url")}`;
  }

  open(sealed: string): string {
    const raw = Buffer.from(sealed.replace(/^v1\./, ""), "base64url");
    const d = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString("utf8");
  }
}

/** A new secret and the otpauth:// address an authenticator app reads (as a QR code or typed). */
export function newTotp(issuer: string, account: string): { secret: string; uri: string } {
  const secret = generateSecret();
  return { secret, uri: generateURI({ issuer, label: account, secret }) };
}

/** The time step `code` is right for (now, or one step either side), or null. Only later steps than `after` count. */
export async function totpStep(secret: string, code: string, nowMs: number, after: number): Promise<number | null> {
  if (!/^\d{6}$/.test(code)) return null;
  const epoch = Math.floor(nowMs / 1000);
  const current = Math.floor(epoch / PERIOD_S);
  // afterTimeStep must not be beyond the window (otplib refuses it): a step that far ahead is no code of now
  if (after >= current + 1) return null;
  const r = await verify({
    secret,
    token: code,
    epoch,
    epochTolerance: PERIOD_S,
    ...(after > 0 ? { afterTimeStep: after } : {}),
  });
  return r.valid ? (r as { timeStep: number }).timeStep : null;
}
