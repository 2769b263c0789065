// `faxgate doctor` on what the config turns on, run as the admin runs it (a child process) against
// real parts: the emulator over HTTPS, certificates made by openssl, the real webhook receiver
// behind its public URL (and a wrong "proxy" answering 404), LibreOffice converting a page, a
// private Dovecot, a DNS server on loopback, and a PostgreSQL address where nothing listens. Each
// failure names what failed and what to do.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/logger.js";
import { DaemonLock } from "../../src/store/daemon-lock.js";
import { WebhookReceiver } from "../../src/webhooks/receiver.js";
import { runCli } from "../helpers/cli.js";
import { startTestDns } from "../helpers/dns-server.js";
import { dovecotMissing, startDovecot, type Dovecot } from "../helpers/dovecot.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { tempFolder } from "../tmp-dir.js";

type Check = { name: string; ok: boolean; detail: string; warn?: boolean };

let dir: string;
let emu: TestEmulator;
let n = 0;
const sofficeThere = execFileSync("sh", ["-c", "command -v soffice || true"], { encoding: "utf8" }).trim() !== "";

beforeAll(async () => {
  dir = tempFolder("doctor");
  emu = await startTestEmulator();
}, 60_000);
afterAll(async () => {
  await emu?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * A config against the emulator with `extra` YAML added; returns its file and data folder. The
 * office converter is off unless `extra` sets it: each conversion costs seconds, and only the
 * LibreOffice test is about it.
 */
function setup(extra: string): { file: string; data: string } {
  const root = path.join(dir, `c${++n}`);
  const data = path.join(root, "data");
  mkdirSync(data, { recursive: true });
  const file = path.join(root, "faxgate.yaml");
  writeFileSync(
    file,
    [
      "api:",
      `  baseUrl: ${emu.baseUrl}`,
      `  caFile: ${emu.caFile}`,
      `data: ${data}`,
      extra.includes("office:") || extra === "office" ? "" : "office:\n  soffice: false",
      extra === "office" ? "" : extra,
      "users:",
      "  - name: alice",
      "    email: alice@example.com",
      `    apiKey: "${TEST_KEYS.aliceBase}"`,
      "",
    ].join("\n"),
  );
  return { file, data };
}

async function doctor(file: string): Promise<{ code: number; checks: Check[] }> {
  const r = await runCli(["doctor", "--json", "--config", file], { timeoutMs: 120_000 });
  return { code: r.code ?? -1, checks: JSON.parse(r.stdout) as Check[] };
}

const find = (checks: Check[], name: string): Check => {
  const c = checks.find((x) => x.name === name);
  expect(c, `a "${name}" check in ${JSON.stringify(checks.map((x) => x.name))}`).toBeDefined();
  return c!;
};

/** A self-signed certificate and its key, valid for a year, or (`expired`) only in January 2020. */
function cert(name: string, expired = false): { cert: string; key: string } {
  const out = { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
  const ec = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-subj",
    `/CN=${name}.example.com`,
  ];
  if (!expired) {
    execFileSync("openssl", ["req", "-x509", ...ec, "-days", "365", "-keyout", out.key, "-out", out.cert]);
    return out;
  }
  // `openssl req` takes no past dates: `openssl ca -selfsign` does
  const ca = path.join(dir, `${name}-ca`);
  mkdirSync(path.join(ca, "new"), { recursive: true });
  writeFileSync(path.join(ca, "index.txt"), "");
  writeFileSync(path.join(ca, "serial"), "01\n");
  writeFileSync(
    path.join(ca, "ca.cnf"),
    `[ca]\ndefault_ca=d\n[d]\ndir=${ca}\nnew_certs_dir=${ca}/new\ndatabase=${ca}/index.txt\nserial=${ca}/serial\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n`,
  );
  const csr = path.join(ca, "req.csr");
  execFileSync("openssl", ["req", "-new", ...ec, "-keyout", out.key, "-out", csr]);
  execFileSync(
    "openssl",
    [
      "ca",
      "-batch",
      "-config",
      path.join(ca, "ca.cnf"),
      "-selfsign",
      "-keyfile",
      out.key,
      "-in",
      csr,
      "-out",
      out.cert,
      "-startdate",
      "20200101000000Z",
      "-enddate",
      "20200131000000Z",
      "-notext",
    ],
    { stdio: "ignore" },
  );
  return out;
}

describe("doctor: the console's TLS", () => {
  it("passes a certificate with its own key, and names a wrong key, an expired and a missing certificate", async () => {
    const good = cert("console");
    const other = cert("other");
    const expired = cert("expired", true);
    const port = await freePort();
    const web = (tls: { cert: string; key: string }) =>
      `web:\n  listen: 127.0.0.1:${port}\n  tls: { cert: ${tls.cert}, key: ${tls.key} }`;

    const ok = find((await doctor(setup(web(good)).file)).checks, "web.tls");
    expect(ok.ok).toBe(true);
    expect(ok.detail).toMatch(/console\.crt \(CN=console\.example\.com\) matches its key, valid until \d{4}-\d\d-\d\d/);

    const wrong = await doctor(setup(web({ cert: good.cert, key: other.key })).file);
    expect(wrong.code).toBe(1);
    expect(find(wrong.checks, "web.tls")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/other\.key is not the key of .*console\.crt; give web\.tls\.key the private key/),
    });

    const old = await doctor(setup(web(expired)).file);
    expect(find(old.checks, "web.tls")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/expired\.crt \(CN=expired\.example\.com\) expired on 2020-01-31; renew it/),
    });

    const gone = await doctor(setup(web({ cert: path.join(dir, "nope.crt"), key: good.key })).file);
    expect(find(gone.checks, "web.tls")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/nope\.crt: missing; give web\.tls\.cert a PEM certificate file/),
    });
  }, 240_000);
});

describe("doctor: the webhook receiver", () => {
  it("checks its port, and that its public URL reaches it while the daemon runs", async () => {
    const listenPort = await freePort();
    const proxyPort = await freePort();
    const hooks = (url: string) =>
      [
        "webhooks:",
        `  listen: 127.0.0.1:${listenPort}`,
        `  url: ${url}`,
        "  username: faxgate",
        "  password: a-long-webhook-password",
      ].join("\n");

    // not running: the port is free and the URL is not tried, with what to do
    const idle = setup(hooks(`http://127.0.0.1:${listenPort}/faxgate/events`));
    const before = await doctor(idle.file);
    expect(find(before.checks, `listen 127.0.0.1:${listenPort}`)).toMatchObject({ ok: true, detail: "free" });
    expect(find(before.checks, "webhooks url")).toMatchObject({
      ok: true,
      warn: true,
      detail: expect.stringMatching(/not tried: faxgate is not running; start it and run doctor again/),
    });

    // "running": the data folder's lock held, the real receiver listening
    const receiver = new WebhookReceiver({
      config: {
        listen: `127.0.0.1:${listenPort}`,
        url: `http://127.0.0.1:${listenPort}/faxgate/events`,
        username: "faxgate",
        password: "a-long-webhook-password",
        pollInterval: 300_000,
      },
      handlers: { outbound: () => false, inbound: () => false },
      logger: silentLogger(),
    });
    await receiver.listen();
    const lock = DaemonLock.acquire(idle.data);
    // a "proxy" that does not forward the path: what a wrong proxy rule looks like from outside
    const proxy = http.createServer((_req, res) => res.writeHead(404).end("not found"));
    await new Promise<void>((r) => proxy.listen(proxyPort, "127.0.0.1", r));
    try {
      const up = await doctor(idle.file);
      expect(find(up.checks, `listen 127.0.0.1:${listenPort}`).detail).toMatch(/in use by the running faxgate/);
      expect(find(up.checks, "webhooks url")).toMatchObject({
        ok: true,
        detail: expect.stringMatching(/reaches the receiver/),
      });

      const viaProxy = setup(hooks(`http://127.0.0.1:${proxyPort}/faxgate/events`));
      const lock2 = DaemonLock.acquire(viaProxy.data);
      try {
        const bad = await doctor(viaProxy.file);
        expect(bad.code).toBe(1);
        expect(find(bad.checks, "webhooks url")).toMatchObject({
          ok: false,
          detail: expect.stringMatching(
            /answered 404, not the receiver's 401: the proxy in front must forward POST \/faxgate\/events/,
          ),
        });
      } finally {
        lock2.release();
      }
    } finally {
      lock.release();
      await receiver.close();
      await new Promise((r) => proxy.close(r));
    }
  }, 240_000);
});

describe("doctor: PostgreSQL", () => {
  it("says what to do when nothing answers at the database's address, the password masked", async () => {
    const port = await freePort();
    const r = await doctor(setup(`database: postgres://faxgate:hunter2-secret@127.0.0.1:${port}/faxgate`).file);
    expect(r.code).toBe(1);
    const q = find(r.checks, "queue");
    expect(q.ok).toBe(false);
    expect(q.detail).toMatch(/ECONNREFUSED.*; nothing listens at that host and port: check the port in `database:`/);
    expect(q.detail).not.toContain("hunter2-secret");
  }, 120_000);
});

describe.skipIf(!sofficeThere)("doctor: LibreOffice", () => {
  it("converts a one-page document with the daemon's office settings, and names a converter that fails", async () => {
    const good = await doctor(setup("office").file);
    expect(find(good.checks, "office conversion")).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/a one-page document converted to PDF in \d+ ms/),
    });
    // a "LibreOffice" that exits at once without a PDF
    const fake = path.join(dir, "soffice-broken");
    writeFileSync(fake, "#!/bin/sh\nexit 1\n", { mode: 0o755 });
    const bad = await doctor(setup(`office:\n  soffice: ${fake}`).file);
    expect(bad.code).toBe(1);
    expect(find(bad.checks, "office conversion")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(
        /a one-page document could not be converted: .*; office documents would be refused/,
      ),
    });
  }, 240_000);
});

describe.skipIf(dovecotMissing() !== null)("doctor: an IMAP mailbox", () => {
  const USER = "fax@clinic.test";
  const PASSWORD = "mailbox-pass-7391";
  let dovecot: Dovecot;
  beforeAll(async () => {
    dovecot = await startDovecot({ [USER]: PASSWORD });
  }, 60_000);
  afterAll(async () => {
    await dovecot?.dispose();
  });
  const box = (password: string, extra = "") =>
    [
      "imap:",
      "  mailboxes:",
      `    - {name: front-desk, host: 127.0.0.1, port: ${dovecot.port}, tls: "off", user: "${USER}", password: "${password}", trustedAuthservIds: [mx.clinic.test]${extra}}`,
    ].join("\n");

  it("signs in as the daemon will and finds the folder; a wrong password or folder is named, the password never", async () => {
    await dovecot.deliver(USER, PASSWORD, "From: a@b.test\r\nSubject: x\r\n\r\nhello\r\n");
    const ok = await doctor(setup(box(PASSWORD)).file);
    expect(find(ok.checks, "imap front-desk")).toMatchObject({
      ok: true,
      detail: `signed in as ${USER} at 127.0.0.1:${dovecot.port}; INBOX holds 1 messages`,
    });

    const wrong = await doctor(setup(box("not-the-password-1")).file);
    expect(wrong.code).toBe(1);
    const refused = find(wrong.checks, "imap front-desk");
    expect(refused).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/the server refused the sign-in as fax@clinic\.test: check the password/),
    });
    expect(JSON.stringify(wrong.checks)).not.toContain("not-the-password-1");

    const folder = await doctor(setup(box(PASSWORD, ", folder: Faxes")).file);
    expect(find(folder.checks, "imap front-desk")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/but there is no folder "Faxes" \(it has INBOX\); fix imap\.mailboxes\[\]\.folder/),
    });

    const port = await freePort();
    const nobody = await doctor(setup(box(PASSWORD).replace(`port: ${dovecot.port}`, `port: ${port}`)).file);
    expect(find(nobody.checks, "imap front-desk").detail).toMatch(/nothing answers there \(ECONNREFUSED\)/);
  }, 240_000);
});

describe("doctor: the resolvers of the public MX mode", () => {
  it("passes resolvers that answer (no such name is an answer) and names ones that do not", async () => {
    const dns = await startTestDns({ "_dmarc.fax.clinic.test": ["v=DMARC1; p=none"] });
    const smtp = (domain: string, servers: string) =>
      [
        "smtp:",
        "  listen: [127.0.0.1:0]",
        `  domains: [${domain}]`,
        "  senderAuth: {mode: verify}",
        `dns: {servers: [${servers}], timeout: 300ms}`,
      ].join("\n");
    try {
      const ok = await doctor(setup(smtp("fax.clinic.test", dns.server)).file);
      expect(find(ok.checks, "sender checks dns")).toMatchObject({
        ok: true,
        detail: expect.stringMatching(/answered \(_dmarc\.fax\.clinic\.test: 1 TXT record\(s\)\)/),
      });
      const none = await doctor(setup(smtp("other.clinic.test", dns.server)).file);
      expect(find(none.checks, "sender checks dns").detail).toMatch(/\(_dmarc\.other\.clinic\.test: no such record\)/);
      expect(dns.asked).toContain("TXT _dmarc.other.clinic.test");
    } finally {
      await dns.close();
    }
    // a port where no DNS server listens: the question goes unanswered
    const dead = await freePort();
    const down = await doctor(setup(smtp("fax.clinic.test", `127.0.0.1:${dead}`)).file);
    expect(down.code).toBe(1);
    expect(find(down.checks, "sender checks dns")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(
        /did not answer _dmarc\.fax\.clinic\.test \(E[A-Z]+\): .*mail from outside would get 451/,
      ),
    });
  }, 120_000);
});
