// A time-stamp authority on loopback for tests: a CA and a TSA certificate made with openssl, and a
// tiny HTTP server that pipes each request through `openssl ts -reply`. The real RFC 3161 answers
// of a real implementation, so the gateway's request and its check of the token meet another's.
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { createServer as createHttpServer, type Server } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { removeFolder, tempFolder } from "../tmp-dir.js";

const run = promisify(execFile);

export interface LocalTsa {
  url: string;
  /** the CA that issued the TSA's certificate (PEM) */
  caPem: string;
  caFile: string;
  /** requests answered */
  answered: number;
  stop(): Promise<void>;
}

export async function startLocalTsa(): Promise<LocalTsa> {
  const dir = tempFolder("tsa");
  const f = (n: string) => path.join(dir, n);
  const openssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  await openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    f("ca.key"),
    "-out",
    f("ca.crt"),
    "-days",
    "2",
    "-subj",
    "/CN=Test TSA Root",
  );
  await writeFile(f("tsa.ext"), "extendedKeyUsage=critical,timeStamping\nkeyUsage=critical,digitalSignature\n");
  await openssl(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    f("tsa.key"),
    "-out",
    f("tsa.csr"),
    "-subj",
    "/CN=Test TSA/O=faxgate tests",
  );
  await openssl(
    "x509",
    "-req",
    "-in",
    f("tsa.csr"),
    "-CA",
    f("ca.crt"),
    "-CAkey",
    f("ca.key"),
    "-CAcreateserial",
    "-out",
    f("tsa.crt"),
    "-days",
    "2",
    "-extfile",
    f("tsa.ext"),
  );
  await writeFile(f("serial"), "01\n");
  await writeFile(
    f("ts.cnf"),
    [
      "[ tsa ]",
      "default_tsa = tsa_config1",
      "[ tsa_config1 ]",
      `serial = ${f("serial")}`,
      "crypto_device = builtin",
      `signer_cert = ${f("tsa.crt")}`,
      `signer_key = ${f("tsa.key")}`,
      "signer_digest = sha256",
      "default_policy = 1.2.3.4.1",
      "digests = sha256, sha384, sha512",
      "accuracy = secs:1",
      "ordering = yes",
      "tsa_name = yes",
      "ess_cert_id_chain = no",
      "ess_cert_id_alg = sha256",
      "",
    ].join("\n"),
  );
  let n = 0;
  const tsa: LocalTsa = {
    url: "",
    caPem: await readFile(f("ca.crt"), "utf8"),
    caFile: f("ca.crt"),
    answered: 0,
    stop: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      removeFolder(dir);
    },
  };
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const id = ++n;
      try {
        if (req.method !== "POST" || req.headers["content-type"] !== "application/timestamp-query") {
          res.writeHead(400).end();
          return;
        }
        await writeFile(f(`q${id}.tsq`), Buffer.concat(chunks));
        await openssl("ts", "-reply", "-config", f("ts.cnf"), "-queryfile", f(`q${id}.tsq`), "-out", f(`r${id}.tsr`));
        const body = await readFile(f(`r${id}.tsr`));
        tsa.answered++;
        res.writeHead(200, { "content-type": "application/timestamp-reply" }).end(body);
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  tsa.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tsa`;
  return tsa;
}

/** A loopback port nothing listens on (bound, then closed): an authority that is down. */
export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
