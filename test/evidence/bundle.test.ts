// The bundle's seal and its offline check: a bundle verifies; it fails after one byte of any member
// changes, after a member is removed or added, when signed by another key than the manifest names
// or than the one expected; RFC 3161 tokens from a local `openssl ts` authority are asked, checked
// and fail when changed; an authority that is down stops the bundle unless the operator said not to.
import { generateKeyPairSync, sign } from "node:crypto";
import { unzipSync, zipSync, type Zippable } from "fflate";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MANIFEST, SIGNATURE, TOKEN, sealBundle, verifyBundle } from "../../src/evidence/bundle.js";
import { keyFromText, loadSigningKey, newKeyLine, type SigningKey } from "../../src/evidence/signing-key.js";
import { FaxgateError } from "../../src/errors.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";
import { closedPort, startLocalTsa, type LocalTsa } from "./local-tsa.js";
import { statSync } from "node:fs";
import path from "node:path";

const enc = (s: string) => new TextEncoder().encode(s);
const FILES = [
  { path: "documents/1-order.pdf", data: enc("%PDF-1.4 the order\n"), what: "document 1" },
  { path: "recipients/1/fax-as-rendered.pdf", data: enc("%PDF-1.4 as rendered\n"), what: "rendered" },
  { path: "ledger-rows.jsonl", data: enc('{"seq":1}\n'), what: "rows" },
];

const newKey = (): SigningKey => keyFromText(newKeyLine(), "test key");

async function seal(key: SigningKey, extra: Partial<Parameters<typeof sealBundle>[0]> = {}) {
  return sealBundle({
    files: FILES,
    subject: { job: { id: "j1" } },
    madeAt: "2026-11-28T22:00:00.000Z",
    key,
    ...extra,
  });
}

/** The zip again with `change` applied to its members (fflate, as a person with a zip tool would). */
function rezip(zip: Uint8Array, change: (m: Record<string, Uint8Array>) => void): Uint8Array {
  const members = unzipSync(zip);
  change(members);
  return zipSync(members as Zippable);
}

const failed = (v: Awaited<ReturnType<typeof verifyBundle>>) => v.checks.filter((c) => !c.ok).map((c) => c.what);

describe("evidence bundle", () => {
  const key = newKey();

  it("verifies as made, and names every member it checked", async () => {
    const { zip, manifest } = await seal(key);
    const v = await verifyBundle(zip);
    expect(v.ok, JSON.stringify(v.checks)).toBe(true);
    expect(v.fingerprint).toBe(key.fingerprint);
    expect(manifest.files.map((f) => f.path)).toEqual(FILES.map((f) => f.path));
    for (const f of FILES) expect(v.checks.find((c) => c.what === f.path)?.ok).toBe(true);
    expect(v.checks.find((c) => c.what === "signature")?.ok).toBe(true);
  });

  it("fails after one byte of any member changes, naming the member", async () => {
    const { zip } = await seal(key);
    const names = Object.keys(unzipSync(zip));
    expect(names).toEqual(expect.arrayContaining([MANIFEST, SIGNATURE, ...FILES.map((f) => f.path)]));
    for (const name of names) {
      const changed = rezip(zip, (m) => {
        const copy = new Uint8Array(m[name]!);
        copy[Math.floor(copy.length / 2)] ^= 0x01;
        m[name] = copy;
      });
      const v = await verifyBundle(changed);
      expect(v.ok, name).toBe(false);
      // a changed manifest or signature is a signature failure; a changed file is that file's
      const blamed = name === MANIFEST || name === SIGNATURE ? ["signature", MANIFEST] : [name];
      expect(
        failed(v).some((w) => blamed.includes(w)),
        `${name}: ${failed(v)}`,
      ).toBe(true);
    }
  });

  it("fails after a byte of the zip file itself changes", async () => {
    const { zip } = await seal(key, { files: [{ path: "a.txt", data: enc("x".repeat(2000)), what: "a" }] });
    const copy = new Uint8Array(zip);
    // inside the stored member's data (after the first local header and its name)
    copy[60] ^= 0x01;
    expect((await verifyBundle(copy)).ok).toBe(false);
  });

  it("fails after a member is removed or added", async () => {
    const { zip } = await seal(key);
    for (const name of [...FILES.map((f) => f.path), SIGNATURE, MANIFEST]) {
      const v = await verifyBundle(rezip(zip, (m) => delete m[name]));
      expect(v.ok, name).toBe(false);
    }
    const added = await verifyBundle(rezip(zip, (m) => (m["documents/2-extra.pdf"] = enc("%PDF extra"))));
    expect(added.ok).toBe(false);
    expect(failed(added)).toEqual(["documents/2-extra.pdf"]);
  });

  it("fails when signed by another key than the manifest names, or than the one expected", async () => {
    const { zip } = await seal(key);
    // another key signs the same manifest: the signature is not the named key's
    const other = generateKeyPairSync("ed25519").privateKey;
    const resigned = rezip(zip, (m) => {
      m[SIGNATURE] = enc(`${sign(null, m[MANIFEST]!, other).toString("base64")}\n`);
    });
    const v = await verifyBundle(resigned);
    expect(v.ok).toBe(false);
    expect(failed(v)).toEqual(["signature"]);
    // a whole bundle made by another gateway holds by itself, but not as this gateway's
    const foreign = (await seal(newKey())).zip;
    expect((await verifyBundle(foreign)).ok).toBe(true);
    const pinned = await verifyBundle(foreign, { expectedKey: key.publicPem });
    expect(pinned.ok).toBe(false);
    expect(failed(pinned)).toEqual(["signer"]);
    expect((await verifyBundle(zip, { expectedKey: key.fingerprint })).ok).toBe(true);
  });

  it("the data folder's key is made once, 0600, and read back the same", async () => {
    const dir = tempFolder("evidence-key");
    try {
      const [a, b] = await Promise.all([loadSigningKey({ dataDir: dir }), loadSigningKey({ dataDir: dir })]);
      expect(a.fingerprint).toBe(b.fingerprint);
      expect((await loadSigningKey({ dataDir: dir })).fingerprint).toBe(a.fingerprint);
      expect(statSync(path.join(dir, "evidence-key.pem")).mode & 0o777).toBe(0o600);
      // a fleet on PostgreSQL without evidence.signingKey would sign with as many keys as gateways
      await expect(loadSigningKey({ dataDir: dir, shared: true })).rejects.toThrow(/evidence\.signingKey/);
      const line = newKeyLine();
      const configured = await loadSigningKey({ dataDir: dir, configured: line, shared: true });
      expect(configured.fingerprint).toBe(keyFromText(line, "x").fingerprint);
      expect(() => keyFromText("not a key", "evidence.signingKey")).toThrow(/evidence\.signingKey is not an Ed25519/);
    } finally {
      removeFolder(dir);
    }
  });
});

describe("RFC 3161 time-stamps (a local `openssl ts` authority)", () => {
  let tsa: LocalTsa;
  const key = newKey();
  beforeAll(async () => {
    tsa = await startLocalTsa();
  });
  afterAll(async () => {
    await tsa?.stop();
  });

  it("asks for a token, checks it offline (and its chain to the TSA's CA), and fails when it changes", async () => {
    const before = tsa.answered;
    const sealed = await seal(key, { tsa: { url: tsa.url, timeoutMs: 10_000 } });
    expect(tsa.answered).toBe(before + 1);
    expect(sealed.timestamped).toBe(true);
    expect(sealed.manifest.timestamp).toEqual({ tsa: tsa.url });
    const v = await verifyBundle(sealed.zip, { tsaCa: [tsa.caPem] });
    expect(v.ok, JSON.stringify(v.checks)).toBe(true);
    expect(v.checks.find((c) => c.what === TOKEN)?.note).toMatch(/time-stamped \d{4}-.* by CN=Test TSA/);
    expect(Math.abs(Date.parse(v.timestampedAt!) - Date.now())).toBeLessThan(120_000);

    // another CA: the chain does not hold
    const otherCa = await startLocalTsa();
    try {
      const foreign = await verifyBundle(sealed.zip, { tsaCa: [otherCa.caPem] });
      expect(failed(foreign)).toEqual([TOKEN]);
    } finally {
      await otherCa.stop();
    }
    // one byte of the token changes (in its signature, near the end)
    const bent = rezip(sealed.zip, (m) => {
      const t = new Uint8Array(m[TOKEN]!);
      t[t.length - 10] ^= 0x01;
      m[TOKEN] = t;
    });
    expect(failed(await verifyBundle(bent))).toEqual([TOKEN]);
    // the token removed: the manifest promised one
    const removed = await verifyBundle(rezip(sealed.zip, (m) => delete m[TOKEN]));
    expect(failed(removed)).toEqual([TOKEN]);
    // the token of another manifest
    const second = await seal(key, { tsa: { url: tsa.url, timeoutMs: 10_000 }, madeAt: "2026-11-28T23:00:00.000Z" });
    const swapped = rezip(sealed.zip, (m) => (m[TOKEN] = unzipSync(second.zip)[TOKEN]!));
    const sv = await verifyBundle(swapped);
    expect(failed(sv)).toEqual([TOKEN]);
    expect(sv.checks.find((c) => c.what === TOKEN)?.note).toContain("another manifest");
  });

  it("an authority that is down: no bundle, with a clear reason; one without a token when the operator asks", async () => {
    const port = await closedPort();
    const down = { url: `http://127.0.0.1:${port}/tsa`, timeoutMs: 5_000 };
    const err = await seal(key, { tsa: down }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FaxgateError);
    expect((err as FaxgateError).code).toBe("TIMESTAMP_UNAVAILABLE");
    expect((err as Error).message).toContain(`the time-stamp authority ${down.url} could not be reached`);
    // a password in the authority's URL is not repeated in the error
    const withPassword = { ...down, url: `http://user:tsa-secret@127.0.0.1:${port}/tsa` };
    const masked = (await seal(key, { tsa: withPassword }).catch((e: unknown) => e)) as Error;
    expect(masked.message).toContain("could not be reached");
    expect(masked.message).not.toContain("tsa-secret");
    const without = await seal(key, { tsa: down, withoutToken: true });
    expect(without.timestamped).toBe(false);
    expect(without.manifest.timestamp).toBeUndefined();
    expect(Object.keys(unzipSync(without.zip))).not.toContain(TOKEN);
    expect((await verifyBundle(without.zip)).ok).toBe(true);
  });
});
