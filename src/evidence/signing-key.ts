// The gateway's own Ed25519 key that signs evidence manifests. One gateway: made on first use in
// the data folder (evidence-key.pem, 0600) and kept there. A fleet on PostgreSQL: every gateway must
// sign with the same key, so it comes from the config (evidence.signingKey, e.g. ${VAR} from the
// secrets file) and none is made. The private key is never logged, printed or put in an error.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { readOrMakeOnce } from "../fs/index.js";
import path from "node:path";
import { FaxgateError } from "../errors.js";
import { sha256Hex } from "../sha256.js";

export const KEY_FILE = "evidence-key.pem";

export interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** SubjectPublicKeyInfo, PEM: what `faxgate evidence key` prints and a bundle carries */
  publicPem: string;
  /** SHA-256 of the public key's DER, hex: a short name to compare by eye */
  fingerprint: string;
  /** where it came from, for messages: a file path or the config key */
  source: string;
}

/** The key from its PKCS#8 form (PEM, or base64 of the DER on one line, as a secrets file holds it). */
export function keyFromText(text: string, source: string): SigningKey {
  let privateKey: KeyObject;
  try {
    const trimmed = text.trim();
    privateKey = trimmed.startsWith("-----BEGIN")
      ? createPrivateKey(trimmed)
      : createPrivateKey({ key: Buffer.from(trimmed, "base64"), format: "der", type: "pkcs8" });
  } catch {
    // the reason from OpenSSL could quote the key's bytes: say only what was expected
    throw new FaxgateError("CONFIG_INVALID", `${source} is not an Ed25519 private key (PKCS#8, PEM or base64)`, {
      field: source,
    });
  }
  if (privateKey.asymmetricKeyType !== "ed25519")
    throw new FaxgateError("CONFIG_INVALID", `${source} is a ${privateKey.asymmetricKeyType} key, not Ed25519`, {
      field: source,
    });
  return withPublic(privateKey, source);
}

export function publicKeyFromPem(pem: string): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`a ${key.asymmetricKeyType} key, not Ed25519`);
  return key;
}

export function fingerprintOf(publicKey: KeyObject): string {
  return sha256Hex(publicKey.export({ format: "der", type: "spki" }));
}

/** A new key as one base64 line (PKCS#8 DER), for a fleet's secrets file. */
export function newKeyLine(): string {
  const { privateKey } = generateKeyPairSync("ed25519");
  return privateKey.export({ format: "der", type: "pkcs8" }).toString("base64");
}

/**
 * The signing key: the configured one, else the data folder's, made there on first use. Two
 * processes making it at once (the daemon and a CLI command) end with the same key: the file is
 * written whole under a temporary name and published with link(), which fails when one exists.
 */
export async function loadSigningKey(opts: {
  dataDir: string;
  configured?: string;
  /** a PostgreSQL fleet: a key of the data folder would differ per gateway */
  shared?: boolean;
}): Promise<SigningKey> {
  if (opts.configured) return keyFromText(opts.configured, "evidence.signingKey");
  if (opts.shared)
    throw new FaxgateError(
      "CONFIG_INVALID",
      "gateways that share a PostgreSQL queue sign evidence with one key: set evidence.signingKey " +
        "(e.g. ${FAXGATE_EVIDENCE_KEY} from the secrets file; `faxgate evidence key --new` makes one)",
      { field: "evidence.signingKey" },
    );
  const file = path.join(opts.dataDir, KEY_FILE);
  const made = () => generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }) as string;
  return keyFromText(await readOrMakeOnce(file, made), file);
}

function withPublic(privateKey: KeyObject, source: string): SigningKey {
  const publicKey = createPublicKey(privateKey);
  return {
    privateKey,
    publicKey,
    publicPem: publicKey.export({ format: "pem", type: "spki" }).toString(),
    fingerprint: fingerprintOf(publicKey),
    source,
  };
}
