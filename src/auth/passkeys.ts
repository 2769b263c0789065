// Passkeys (WebAuthn) through @simplewebauthn/server: the options a browser's
// navigator.credentials.create/get takes, and the checks of what it answers (challenge, origin,
// RP ID, signature, counter). The relying party is the console as people reach it (web.publicUrl):
// its host name is the RP ID a passkey is bound to, so a passkey made for the console works only there.
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";

export interface StoredPasskey {
  credentialId: string;
  publicKey: string;
  counter: number;
  transports: string[];
}

export interface RelyingParty {
  /** the console's origin, e.g. https://fax.example.com */
  origin: string;
  /** its host name */
  rpId: string;
}

export function relyingParty(publicUrl: string): RelyingParty {
  const u = new URL(publicUrl);
  return { origin: u.origin, rpId: u.hostname };
}

export async function registrationOptions(rp: RelyingParty, user: string, existing: readonly StoredPasskey[]) {
  return generateRegistrationOptions({
    rpName: "faxgate",
    rpID: rp.rpId,
    userName: user,
    attestationType: "none",
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
    authenticatorSelection: { residentKey: "preferred", userVerification: "preferred" },
  });
}

/** The new passkey, or null when the browser's answer does not check out. */
export async function registered(
  rp: RelyingParty,
  challenge: string,
  response: unknown,
): Promise<StoredPasskey | null> {
  const r = await verifyRegistrationResponse({
    response: response as Parameters<typeof verifyRegistrationResponse>[0]["response"],
    expectedChallenge: challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.rpId,
    requireUserVerification: false,
  }).catch(() => null);
  if (!r?.verified) return null;
  const c = r.registrationInfo.credential;
  return {
    credentialId: c.id,
    publicKey: Buffer.from(c.publicKey).toString("base64url"),
    counter: c.counter,
    transports: c.transports ?? [],
  };
}

export async function authenticationOptions(rp: RelyingParty, passkeys: readonly StoredPasskey[]) {
  return generateAuthenticationOptions({
    rpID: rp.rpId,
    allowCredentials: passkeys.map((p) => ({
      id: p.credentialId,
      transports: p.transports as ("usb" | "internal" | "hybrid" | "nfc" | "ble")[],
    })),
    userVerification: "preferred",
  });
}

/** Which of `passkeys` signed, and its new counter; null when none did (or the answer does not check out). */
export async function authenticated(
  rp: RelyingParty,
  challenge: string,
  response: unknown,
  passkeys: readonly StoredPasskey[],
): Promise<{ credentialId: string; counter: number } | null> {
  const id = (response as { id?: unknown })?.id;
  const p = passkeys.find((k) => k.credentialId === id);
  if (!p) return null;
  const r = await verifyAuthenticationResponse({
    response: response as Parameters<typeof verifyAuthenticationResponse>[0]["response"],
    expectedChallenge: challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.rpId,
    credential: {
      id: p.credentialId,
      publicKey: new Uint8Array(Buffer.from(p.publicKey, "base64url")),
      counter: p.counter,
      transports: p.transports as ("usb" | "internal" | "hybrid" | "nfc" | "ble")[],
    },
    requireUserVerification: false,
  }).catch(() => null);
  if (!r?.verified) return null;
  return { credentialId: p.credentialId, counter: r.authenticationInfo.newCounter };
}
