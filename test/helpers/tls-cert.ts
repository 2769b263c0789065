// A self-signed certificate for 127.0.0.1/localhost, made once per test file: the connectors'
// peers serve HTTPS with it and the connectors trust it only through their caFile.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { generate } from "selfsigned";

let made: Promise<{ key: string; cert: string }> | null = null;

export function localCert(): Promise<{ key: string; cert: string }> {
  made ??= generate([{ name: "commonName", value: "127.0.0.1" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    extensions: [
      { name: "basicConstraints", cA: true },
      {
        name: "subjectAltName",
        altNames: [
          { type: 7, ip: "127.0.0.1" },
          { type: 2, value: "localhost" },
        ],
      },
    ],
  }).then((r) => ({ key: r.private, cert: r.cert }));
  return made;
}

/** The certificate as a CA file in `dir`, for a connector's caFile. */
export async function caFileIn(dir: string): Promise<string> {
  const file = path.join(dir, "peer-ca.pem");
  writeFileSync(file, (await localCert()).cert);
  return file;
}
