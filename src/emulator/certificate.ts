// The emulator's TLS identity: a self-signed certificate made on first start and kept in the data
// folder, so a client that trusts ca.pem once keeps trusting the emulator across restarts.
import { readFile, writeFile, rename } from "node:fs/promises";
import path from "node:path";
import { generate } from "selfsigned";

export interface Certificate {
  key: string;
  cert: string;
  caFile: string;
}

export async function ensureCertificate(dataDir: string): Promise<Certificate> {
  const caFile = path.join(dataDir, "ca.pem");
  const keyFile = path.join(dataDir, "key.pem");
  try {
    const [cert, key] = await Promise.all([readFile(caFile, "utf8"), readFile(keyFile, "utf8")]);
    if (cert.includes("BEGIN CERTIFICATE") && key.includes("PRIVATE KEY")) return { key, cert, caFile };
  } catch {
    // first start: make one below
  }
  const now = Date.now();
  const pems = await generate([{ name: "commonName", value: "faxgate emulator" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate: new Date(now - 24 * 3600_000),
    notAfterDate: new Date(now + 10 * 365 * 24 * 3600_000),
    extensions: [
      { name: "basicConstraints", cA: true },
      { name: "keyUsage", digitalSignature: true, keyCertSign: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      {
        name: "subjectAltName",
        altNames: [
          { type: 7, ip: "127.0.0.1" },
          { type: 7, ip: "::1" },
          { type: 2, value: "localhost" },
        ],
      },
    ],
  });
  // key first, then cert: a cert without its key is never left behind as "valid"
  await writeFile(`${keyFile}.tmp`, pems.private, { mode: 0o600 });
  await rename(`${keyFile}.tmp`, keyFile);
  await writeFile(`${caFile}.tmp`, pems.cert, { mode: 0o644 });
  await rename(`${caFile}.tmp`, caFile);
  return { key: pems.private, cert: pems.cert, caFile };
}
