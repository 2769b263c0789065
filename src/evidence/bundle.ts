// The evidence bundle's form: a zip of the gathered files, a manifest that lists each with its
// SHA-256 and size, the manifest's Ed25519 signature, and (optionally) an RFC 3161 token over the
// manifest. Sealing and checking live together so the two cannot drift apart.
import { sign, verify as verifySignature } from "node:crypto";
import { unzipSync, zipSync, type Zippable } from "fflate";
import { maskUrl } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import { sha256Hex } from "../sha256.js";
import { fingerprintOf, publicKeyFromPem, type SigningKey } from "./signing-key.js";
import { checkTimestamp, requestTimestamp, type TsaSettings } from "./timestamp.js";

export const FORMAT = "faxgate-evidence/1";
export const MANIFEST = "manifest.json";
export const SIGNATURE = "manifest.sig";
export const TOKEN = "manifest.tst";

export interface BundleFile {
  /** path inside the zip, e.g. "documents/1-order.pdf" */
  path: string;
  data: Uint8Array;
  /** what it is, in words a reader of the manifest understands */
  what: string;
}

export interface ManifestEntry {
  path: string;
  sha256: string;
  bytes: number;
  what: string;
}

export interface Manifest {
  format: typeof FORMAT;
  madeAt: string;
  /** the key that signed manifest.sig; compare its fingerprint with `faxgate evidence key` */
  signer: { algorithm: "Ed25519"; publicKey: string; fingerprint: string };
  /** present when a token was asked of a time-stamp authority: manifest.tst must be there */
  timestamp?: { tsa: string };
  /** what the bundle is about (the job, its recipients as the service recorded them) */
  subject: Record<string, unknown>;
  files: ManifestEntry[];
}

/**
 * Signs the manifest of `files` and zips it all. With a TSA, the manifest says so and its token is
 * added; when the authority cannot give one, `withoutToken` decides: false (the default) throws, so
 * no bundle is made; true seals the bundle without a token (and without the promise of one).
 */
export async function sealBundle(input: {
  files: BundleFile[];
  subject: Record<string, unknown>;
  madeAt: string;
  key: SigningKey;
  tsa?: TsaSettings;
  withoutToken?: boolean;
}): Promise<{ zip: Uint8Array; manifest: Manifest; manifestSha256: string; timestamped: boolean }> {
  const seen = new Set<string>();
  for (const f of input.files) {
    if (seen.has(f.path) || [MANIFEST, SIGNATURE, TOKEN].includes(f.path))
      throw new Error(`evidence bundle: the path ${f.path} is used twice`);
    seen.add(f.path);
  }
  const manifestOf = (tsa: boolean): Manifest => ({
    format: FORMAT,
    madeAt: input.madeAt,
    signer: { algorithm: "Ed25519", publicKey: input.key.publicPem, fingerprint: input.key.fingerprint },
    ...(tsa && input.tsa ? { timestamp: { tsa: maskUrl(input.tsa.url) } } : {}),
    subject: input.subject,
    files: input.files.map((f) => ({
      path: f.path,
      sha256: sha256Hex(f.data),
      bytes: f.data.byteLength,
      what: f.what,
    })),
  });
  let manifest = manifestOf(true);
  let bytes = encodeManifest(manifest);
  let token: Uint8Array | null = null;
  if (input.tsa) {
    try {
      token = await requestTimestamp(input.tsa, bytes);
    } catch (err) {
      if (!input.withoutToken) throw err;
      manifest = manifestOf(false);
      bytes = encodeManifest(manifest);
    }
  }
  const signature = sign(null, bytes, input.key.privateKey);
  const members: Zippable = {
    [MANIFEST]: bytes,
    [SIGNATURE]: new TextEncoder().encode(`${signature.toString("base64")}\n`),
    ...(token ? { [TOKEN]: token } : {}),
  };
  for (const f of input.files) members[f.path] = f.data;
  return {
    zip: zipSync(members, { level: 6 }),
    manifest,
    manifestSha256: sha256Hex(bytes),
    timestamped: token !== null,
  };
}

function encodeManifest(m: Manifest): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(m, null, 2)}\n`);
}

export interface Check {
  what: string;
  ok: boolean;
  /** why it failed, or a note (the signer's fingerprint, the token's time) */
  note?: string;
}

export interface Verdict {
  ok: boolean;
  checks: Check[];
  fingerprint?: string;
  timestampedAt?: string;
}

/**
 * Checks a bundle offline: the manifest's signature (by the key it names, and that key is
 * `expectedKey` when one is given), every listed member's SHA-256 and size, no member missing or
 * added or twice, and the token when the manifest promises one (with `tsaCa`, its chain too).
 */
export async function verifyBundle(
  zip: Uint8Array,
  opts: { expectedKey?: string; tsaCa?: string[] } = {},
): Promise<Verdict> {
  const checks: Check[] = [];
  const fail = (what: string, note: string): Verdict => {
    checks.push({ what, ok: false, note });
    return { ok: false, checks };
  };
  const names: string[] = [];
  let members: Record<string, Uint8Array>;
  try {
    members = unzipSync(zip, {
      filter: (f) => {
        names.push(f.name);
        return true;
      },
    });
  } catch (err) {
    return fail("zip", `not a readable zip (${(err as Error).message})`);
  }
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length) checks.push({ what: "members", ok: false, note: `named twice: ${[...new Set(twice)].join(", ")}` });
  const bytes = members[MANIFEST];
  if (!bytes) return fail(MANIFEST, "missing");
  let manifest: Manifest;
  try {
    manifest = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as Manifest;
    if (manifest.format !== FORMAT || !Array.isArray(manifest.files) || !manifest.signer?.publicKey)
      throw new Error(`not a ${FORMAT} manifest`);
  } catch (err) {
    return fail(MANIFEST, `cannot be read (${(err as Error).message})`);
  }
  checks.push(...(await signatureChecks(manifest, bytes, members[SIGNATURE], opts.expectedKey)));
  const listed = new Set<string>([MANIFEST, SIGNATURE]);
  for (const f of manifest.files) {
    listed.add(f.path);
    const data = members[f.path];
    if (!data) checks.push({ what: f.path, ok: false, note: "listed in the manifest but missing" });
    else if (data.byteLength !== f.bytes || sha256Hex(data) !== f.sha256)
      checks.push({ what: f.path, ok: false, note: "changed: its SHA-256 is not the manifest's" });
    else checks.push({ what: f.path, ok: true, note: `sha256 ${f.sha256}` });
  }
  let timestampedAt: string | undefined;
  if (manifest.timestamp) {
    listed.add(TOKEN);
    const token = members[TOKEN];
    if (!token) checks.push({ what: TOKEN, ok: false, note: `missing (the manifest asked ${manifest.timestamp.tsa})` });
    else {
      const t = await checkTimestamp(token, bytes, { trusted: opts.tsaCa });
      checks.push(
        t.ok
          ? { what: TOKEN, ok: true, note: `time-stamped ${t.genTime}${t.signer ? ` by ${t.signer}` : ""}` }
          : { what: TOKEN, ok: false, note: t.why },
      );
      if (t.ok) timestampedAt = t.genTime;
    }
  }
  for (const n of new Set(names))
    if (!listed.has(n)) checks.push({ what: n, ok: false, note: "not listed in the manifest (added)" });
  return {
    ok: checks.every((c) => c.ok),
    checks,
    fingerprint: manifest.signer.fingerprint,
    ...(timestampedAt ? { timestampedAt } : {}),
  };
}

async function signatureChecks(
  manifest: Manifest,
  bytes: Uint8Array,
  sig: Uint8Array | undefined,
  expectedKey: string | undefined,
): Promise<Check[]> {
  let key: ReturnType<typeof publicKeyFromPem>;
  try {
    key = publicKeyFromPem(manifest.signer.publicKey);
  } catch (err) {
    return [{ what: "signature", ok: false, note: `the manifest's key cannot be read (${(err as Error).message})` }];
  }
  const fingerprint = fingerprintOf(key);
  const out: Check[] = [];
  if (fingerprint !== manifest.signer.fingerprint)
    out.push({ what: "signature", ok: false, note: "the manifest's fingerprint is not its key's" });
  if (expectedKey) {
    let expected: string;
    try {
      expected = /^[0-9a-f]{64}$/i.test(expectedKey.trim())
        ? expectedKey.trim().toLowerCase()
        : fingerprintOf(publicKeyFromPem(expectedKey));
    } catch (err) {
      throw new FaxgateError(
        "USAGE",
        `--key is neither a public key (PEM) nor a fingerprint: ${(err as Error).message}`,
      );
    }
    if (expected !== fingerprint)
      out.push({ what: "signer", ok: false, note: `signed by key ${fingerprint}, not the expected ${expected}` });
    else out.push({ what: "signer", ok: true, note: `the expected key ${fingerprint}` });
  }
  if (!sig) return [...out, { what: SIGNATURE, ok: false, note: "missing" }];
  const text = new TextDecoder().decode(sig).trim();
  const raw = Buffer.from(text, "base64");
  const good = /^[A-Za-z0-9+/]+={0,2}$/.test(text) && raw.byteLength === 64 && verifySignature(null, bytes, key, raw);
  out.push(
    good
      ? { what: "signature", ok: true, note: `Ed25519, key ${fingerprint}` }
      : { what: "signature", ok: false, note: `the manifest's signature does not hold for key ${fingerprint}` },
  );
  return out;
}
