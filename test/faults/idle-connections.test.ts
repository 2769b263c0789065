// Thousands of idle TCP connections to the webhook receiver and the web console of a real daemon
// started with a low descriptor limit (prlimit --nofile): while they are held, SMTP still takes a
// mail, sign-in still works and a print-folder file is still taken. Without caps on the HTTP
// listeners the idle sockets used up the descriptors: SMTP dropped, sign-in and spool scans failed
// with EMFILE.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../src/auth/password.js";
import { childEnv, cliArgv } from "../helpers/cli.js";
import { OutputWatch } from "../helpers/wait.js";
import { startTestEmulator, TEST_KEYS } from "../helpers/emulator.js";
import { freePort } from "../helpers/net.js";
import { TEST_PDF } from "../helpers/store.js";

const NOFILE = 512;
const PER_LISTENER = 2000;
const hasPrlimit = spawnSync("prlimit", ["--version"]).status === 0;
if (!hasPrlimit) console.warn("idle-connection test skipped: prlimit (util-linux) is not installed");

let dir: string;
let emu: Awaited<ReturnType<typeof startTestEmulator>>;
let child: ChildProcess;
let out: OutputWatch;
const ports = { smtp: 0, web: 0, hooks: 0 };
const PASSWORD = "idle-test-password-1";

beforeAll(async () => {
  if (!hasPrlimit) return;
  dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-idle-"));
  emu = await startTestEmulator({ delayMs: 300 });
  ports.smtp = await freePort();
  ports.web = await freePort();
  ports.hooks = await freePort();
  mkdirSync(path.join(dir, "spool"), { recursive: true });
  const config = path.join(dir, "faxgate.yaml");
  writeFileSync(
    config,
    [
      "api:",
      `  baseUrl: ${emu.baseUrl}`,
      `  caFile: ${emu.caFile}`,
      "  historyPerMinute: 10000",
      `data: ${path.join(dir, "data")}`,
      "smtp:",
      `  listen: ["127.0.0.1:${ports.smtp}"]`,
      '  domains: ["fax.example.com"]',
      "  maxConnections: 20",
      "spool:",
      `  root: ${path.join(dir, "spool")}`,
      "  stableFor: 200ms",
      "web:",
      `  listen: 127.0.0.1:${ports.web}`,
      "webhooks:",
      `  listen: 127.0.0.1:${ports.hooks}`,
      `  url: https://fax.example.com/hook`,
      "  username: faxgate",
      "  password: a-long-webhook-password",
      "log: {level: info, format: json}",
      "users:",
      `  - {name: alice, email: alice@example.com, apiKey: ${TEST_KEYS.alice}, password: "${await hashPassword(PASSWORD)}"}`,
    ].join("\n"),
  );
  child = spawn(
    "prlimit",
    [`--nofile=${NOFILE}:${NOFILE}`, process.execPath, ...cliArgv(), "start", "--config", config],
    { cwd: dir, env: childEnv(), stdio: ["ignore", "pipe", "pipe"] },
  );
  out = new OutputWatch(child.stdout!);
  new OutputWatch(child.stderr!);
  await out.waitFor(/"msg":"STARTED"/, 60_000);
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  await emu?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `count` sockets to `port`, spread over `sources` loopback addresses; resolves once each is connected or closed. */
async function idleSockets(port: number, count: number, sources: number): Promise<net.Socket[]> {
  const sockets: net.Socket[] = [];
  const settled: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    const s = net.connect({ host: "127.0.0.1", port, localAddress: `127.0.1.${(i % sources) + 1}` });
    s.on("error", () => undefined);
    sockets.push(s);
    settled.push(
      new Promise((resolve) => {
        s.once("connect", () => resolve());
        s.once("close", () => resolve());
      }),
    );
  }
  await Promise.all(settled);
  return sockets;
}

describe.skipIf(!hasPrlimit)("idle connections against a daemon with few descriptors", () => {
  it("SMTP, sign-in and the spool keep working while thousands of idle sockets are open", async () => {
    // logged before the listeners start, so it is there already (checked last: the functions first)
    const line = /^.*"msg":"descriptor budget for the HTTP listeners".*$/m.exec(out.text);
    const budget = line ? JSON.parse(line[0]) : null;
    const started = Date.now();
    const held = [
      ...(await idleSockets(ports.hooks, PER_LISTENER, 8)),
      ...(await idleSockets(ports.web, PER_LISTENER, 3)),
    ];
    try {
      const open = held.filter((s) => !s.destroyed).length;
      // SMTP takes a mail
      const t = nodemailer.createTransport({
        host: "127.0.0.1",
        port: ports.smtp,
        secure: false,
        ignoreTLS: true,
        connectionTimeout: 5000,
        greetingTimeout: 5000,
        socketTimeout: 10_000,
      });
      const info = await t.sendMail({
        from: "alice@example.com",
        to: "15551234567@fax.example.com",
        subject: "during the flood",
        text: "x",
        attachments: [{ filename: "a.pdf", content: TEST_PDF }],
      });
      t.close();
      expect(info.response).toMatch(/^250 /);
      // sign-in works
      const r = await fetch(`http://127.0.0.1:${ports.web}/login`, {
        method: "POST",
        body: new URLSearchParams({ user: "alice", password: PASSWORD }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(r.status).toBe(200);
      // a print-folder file is taken
      const folder = path.join(dir, "spool", "alice");
      mkdirSync(folder, { recursive: true });
      writeFileSync(path.join(folder, "15557654321.pdf"), TEST_PDF);
      await out.waitFor(/"component":"spool".*"msg":"QUEUED"/, 20_000);
      expect(existsSync(path.join(folder, "15557654321.pdf"))).toBe(false);
      expect(out.text).not.toMatch(/EMFILE/);
      expect(budget?.softLimit).toBe(NOFILE);
      process.stdout.write(
        `idle connections: ${held.length} opened (${open} still open after the caps), nofile ${NOFILE}, budget ${JSON.stringify(budget)}; SMTP 250, sign-in 200, spool taken, ${Date.now() - started} ms\n`,
      );
    } finally {
      for (const s of held) s.destroy();
    }
  }, 120_000);
});
