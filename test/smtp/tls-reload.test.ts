// STARTTLS on a renewed certificate without a restart: the files are replaced (as certbot's
// deploy hook does), the daemon's reload reads them again, and the next STARTTLS session gets the
// new certificate; a file that cannot be read leaves the one in use.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { generate } from "selfsigned";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withRig } from "./harness.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-tls-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function certFor(name: string): Promise<{ cert: string; key: string }> {
  const pems = await generate([{ name: "commonName", value: name }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
  });
  return { cert: pems.cert, key: pems.private };
}

/** EHLO, STARTTLS, handshake: the common name of the certificate the server showed. */
async function startTlsName(port: number): Promise<string> {
  const socket = net.connect(port, "127.0.0.1");
  let buf = "";
  const waitFor = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const on = (d: Buffer) => {
        buf += d.toString("latin1");
        if (re.test(buf)) {
          socket.off("data", on);
          buf = "";
          resolve();
        }
      };
      socket.on("data", on);
      socket.once("error", reject);
    });
  await waitFor(/^220 /m);
  socket.write("EHLO tls.example\r\n");
  await waitFor(/^250 /m);
  socket.write("STARTTLS\r\n");
  await waitFor(/^220 /m);
  const secure = tls.connect({ socket, rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
  });
  const cn = String(secure.getPeerCertificate().subject.CN);
  secure.destroy();
  return cn;
}

describe("smtp.tls reload", () => {
  it("a renewed certificate is served after reloadTls, without a restart; an unreadable one is refused and the old kept", async () => {
    const files = { cert: path.join(dir, "fullchain.pem"), key: path.join(dir, "privkey.pem") };
    const first = await certFor("faxgw-old.example");
    writeFileSync(files.cert, first.cert);
    writeFileSync(files.key, first.key);
    await withRig(null, { smtp: { tls: files } }, async (rig) => {
      expect(await startTlsName(rig.port)).toBe("faxgw-old.example");
      const renewed = await certFor("faxgw-new.example");
      writeFileSync(files.cert, renewed.cert);
      writeFileSync(files.key, renewed.key);
      // before the reload the old one is still served
      expect(await startTlsName(rig.port)).toBe("faxgw-old.example");
      rig.gateway.reloadTls();
      expect(await startTlsName(rig.port)).toBe("faxgw-new.example");

      rmSync(files.key);
      expect(() => rig.gateway.reloadTls()).toThrow(/smtp\.tls: cannot read the certificate or key/);
      expect(await startTlsName(rig.port)).toBe("faxgw-new.example");
    });
  });
});
