// Who may send: trusted networks, SMTP AUTH over STARTTLS (a self-signed cert made here), AUTH
// only over TLS or loopback, an authenticated user only as themselves, failures slowed and cut.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { generate } from "selfsigned";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../src/auth/password.js";
import { converse, RawSmtp } from "../helpers/raw-smtp.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import {
  DOMAIN,
  PDF,
  USERS,
  jobIdOf,
  startRig,
  stopEmulator,
  withPasswords,
  withRig,
  transport,
  type Rig,
} from "./harness.js";

let emu: TestEmulator;
let certDir: string;
let cert: string;
let tls: { cert: string; key: string };
let users: typeof USERS;

beforeAll(async () => {
  emu = await startTestEmulator();
  certDir = mkdtempSync(path.join(os.tmpdir(), "faxgate-"));
  const pems = await generate([{ name: "commonName", value: "localhost" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    extensions: [
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: "localhost" },
          { type: 7, ip: "127.0.0.1" },
        ],
      },
    ],
  });
  cert = pems.cert;
  tls = { cert: path.join(certDir, "cert.pem"), key: path.join(certDir, "key.pem") };
  writeFileSync(tls.cert, pems.cert);
  writeFileSync(tls.key, pems.private);
  const alicePw = await hashPassword("alice-secret");
  users = USERS.map((u) => (u.name === "alice" ? { ...u, password: alicePw } : u));
});
afterAll(async () => {
  await stopEmulator(emu);
  rmSync(certDir, { recursive: true, force: true });
});

const plain = (user: string, pass: string) => Buffer.from(`\0${user}\0${pass}`).toString("base64");

describe("auth: optional, loopback not trusted, STARTTLS configured", () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig(emu, { users, smtp: { tls, trustedNetworks: ["10.0.0.0/8"] } });
  });
  afterAll(async () => rig?.close());

  it("refuses an unauthenticated sender from an untrusted network (550 5.7.1, says to authenticate)", async () => {
    const r = await converse(rig.port, "alice@example.com", [], null);
    expect(r[1]).toContain("STARTTLS");
    expect(r[2]).toMatch(/^550 5\.7\.1 .*authenticate first/);
  });

  it("takes mail after STARTTLS and AUTH as the sender", async () => {
    const info = await transport(rig.port, {
      ignoreTLS: false,
      requireTLS: true,
      tls: { ca: cert, servername: "localhost" },
      auth: { user: "alice", pass: "alice-secret" },
    }).sendMail({
      from: "alice@example.com",
      to: `15551234567@${DOMAIN}`,
      subject: "over TLS",
      attachments: [{ filename: "a.pdf", content: PDF }],
    });
    expect((await rig.store.getJob(jobIdOf(info.response)))?.user).toBe("alice");
  });

  it("an authenticated user may not send as someone else (550 5.7.1)", async () => {
    const err = await transport(rig.port, {
      ignoreTLS: false,
      requireTLS: true,
      tls: { ca: cert, servername: "localhost" },
      auth: { user: "alice@example.com", pass: "alice-secret" },
    })
      .sendMail({ from: "bob@example.com", to: `15551234567@${DOMAIN}`, subject: "forged", text: "x" })
      .catch((e: { responseCode?: number; response?: string }) => e);
    expect((err as { response: string }).response).toMatch(
      /^550 5\.7\.1 Authenticated as alice, you may only send as yourself/,
    );
  });

  it("wrong passwords get 535 5.7.8, slowed down, and the third one ends the session with 421", async () => {
    const { client } = await RawSmtp.connect(rig.port);
    await client.cmd("EHLO x");
    expect(await client.cmd(`AUTH PLAIN ${plain("alice", "nope")}`)).toMatch(/^535 5\.7\.8 Authentication failed/);
    expect(await client.cmd(`AUTH PLAIN ${plain("nobody", "nope")}`)).toMatch(/^535 5\.7\.8/);
    expect(await client.cmd(`AUTH PLAIN ${plain("alice", "still-no")}`)).toMatch(
      /^421 4\.7\.0 Too many failed authentication attempts/,
    );
    expect(await client.reply()).toBe(""); // closed
    client.close();
  });

  it("failed logins over many sessions lock the address out, even for the right password, without a password check", async () => {
    await withRig(emu, { users, smtp: { trustedNetworks: ["10.0.0.0/8"] } }, async (lockRig) => {
      const replies: string[] = [];
      // three sessions of three wrong guesses and one of one: the tenth failure from this address
      for (const guesses of [3, 3, 3, 1]) {
        const { client } = await RawSmtp.connect(lockRig.port);
        await client.cmd("EHLO x");
        for (let i = 0; i < guesses; i += 1)
          replies.push((await client.cmd(`AUTH PLAIN ${plain("alice", `guess-${replies.length}`)}`)).slice(0, 3));
        client.close();
      }
      expect(replies).toEqual(["535", "535", "421", "535", "535", "421", "535", "535", "421", "421"]);
      const { client } = await RawSmtp.connect(lockRig.port);
      await client.cmd("EHLO x");
      expect(await client.cmd(`AUTH PLAIN ${plain("alice", "alice-secret")}`)).toMatch(
        /^421 4\.7\.0 Too many failed logins from your address/,
      );
      client.close();
    });
  });

  it("a user without a password cannot AUTH", async () => {
    const { client } = await RawSmtp.connect(rig.port);
    await client.cmd("EHLO x");
    expect(await client.cmd(`AUTH PLAIN ${plain("bob", "")}`)).toMatch(/^535 /);
    client.close();
  });

  const external = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === "IPv4")?.address;
  it.skipIf(!external)(
    "offers no AUTH in plain text to a non-loopback client, and refuses it (over a real non-loopback address)",
    async () => {
      await withRig(
        emu,
        { users, smtp: { listen: ["0.0.0.0:0"], tls, trustedNetworks: ["10.255.255.0/24"] } },
        async (wide) => {
          const { client } = await RawSmtp.connect(wide.port, external!);
          const ehlo = await client.cmd("EHLO x");
          expect(ehlo).toContain("STARTTLS");
          expect(ehlo).not.toContain("AUTH");
          expect(await client.cmd(`AUTH PLAIN ${plain("alice", "alice-secret")}`)).toMatch(/^5\d\d /);
          expect(await client.cmd("MAIL FROM:<alice@example.com>")).toMatch(/^550 5\.7\.1 .*STARTTLS/);
          client.close();
        },
      );
    },
  );
});

describe("auth: required", () => {
  it("refuses mail without AUTH even from a trusted network (530 5.7.0)", async () => {
    await withRig(emu, { users: await withPasswords(users), smtp: { auth: "required" } }, async (rig) => {
      const r = await converse(rig.port, "alice@example.com", [], null);
      expect(r[2]).toMatch(/^530 5\.7\.0 Authentication required/);
      const info = await transport(rig.port, { auth: { user: "alice", pass: "alice-secret" } }).sendMail({
        from: "alice@example.com",
        to: `15551234567@${DOMAIN}`,
        subject: "loopback auth",
        attachments: [{ filename: "a.pdf", content: PDF }],
      });
      expect(info.response).toMatch(/^250 2\.0\.0 queued as /);
    });
  });
});

describe("auth: off", () => {
  it("offers no AUTH; trusted networks still send", async () => {
    await withRig(emu, { users, smtp: { auth: "off" } }, async (rig) => {
      const { client } = await RawSmtp.connect(rig.port);
      expect(await client.cmd("EHLO x")).not.toContain("AUTH");
      expect(await client.cmd(`AUTH PLAIN ${plain("alice", "alice-secret")}`)).toMatch(/^5\d\d /);
      expect(await client.cmd("MAIL FROM:<alice@example.com>")).toMatch(/^250 /);
      client.close();
    });
  });
});
