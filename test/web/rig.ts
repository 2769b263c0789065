// A whole gateway with its web console against the emulator over real HTTPS, for the console's
// tests: users alice and bob (plain users, each with their own key) and ops (role admin).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Clock } from "../../src/clock.js";
import { configSchema, type Config } from "../../src/config/schema.js";
import { ensureCertificate } from "../../src/emulator/certificate.js";
import { createLogger } from "../../src/log/logger.js";
import { Gateway } from "../../src/main.js";
import { hashPassword } from "../../src/auth/password.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";

export const PASSWORDS = { alice: "alice-web-secret-1", bob: "bob-web-secret-2", ops: "ops-web-secret-3" } as const;
const HASHES = await (async () => ({
  alice: await hashPassword(PASSWORDS.alice),
  bob: await hashPassword(PASSWORDS.bob),
  ops: await hashPassword(PASSWORDS.ops),
}))();

export interface ConsoleRig {
  emu: TestEmulator;
  gw: Gateway;
  base: string;
  dir: string;
  logs: string[];
  /** the SMTP listener's port */
  smtpPort: number;
  /** the certificate's CA file when the console serves https */
  caFile?: string;
  /** a reload (as SIGHUP) with the config `change` makes of the running one */
  reloadWith(change: (c: Config) => Config): Promise<void>;
  stop(): Promise<void>;
}

export async function startConsoleRig(
  opts: {
    tls?: boolean;
    delayMs?: number;
    pollIntervalMs?: number;
    authFailureDelayMs?: number;
    trustedProxies?: string[];
    historyPerMinute?: number;
    adminKey?: boolean;
    clock?: Clock;
    config?: Record<string, unknown>;
    extra?: Record<string, unknown>;
    database?: string;
  } = {},
): Promise<ConsoleRig> {
  const emu = await startTestEmulator({ delayMs: opts.delayMs ?? 300 });
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-web-"));
  let tls: { cert: string; key: string } | undefined;
  let caFile: string | undefined;
  if (opts.tls) {
    const c = await ensureCertificate(dir);
    tls = { cert: c.caFile, key: path.join(dir, "key.pem") };
    caFile = c.caFile;
  }
  const config = configSchema.parse({
    // the test emulator has no history limit; the gateway's own budget is opened to match
    api: { baseUrl: emu.baseUrl, caFile: emu.caFile, historyPerMinute: opts.historyPerMinute ?? 600 },
    data: path.join(dir, "data"),
    ...(opts.database ? { database: opts.database } : {}),
    queue: { pollIntervalMs: opts.pollIntervalMs ?? 200 },
    web: {
      listen: "127.0.0.1:0",
      livePollMs: 200,
      ...(tls ? { tls } : {}),
      ...(opts.trustedProxies ? { trustedProxies: opts.trustedProxies } : {}),
    },
    smtp: { listen: ["127.0.0.1:0"], domains: ["fax.example.com"] },
    users: [
      { name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice, password: HASHES.alice },
      { name: "bob", email: "bob@example.com", apiKey: TEST_KEYS.bob, password: HASHES.bob },
      { name: "ops", email: "admin@example.com", apiKey: TEST_KEYS.admin, password: HASHES.ops, role: "admin" },
      { name: "nopass", email: "nopass@example.com", apiKey: TEST_KEYS.aliceBase },
    ],
    ...opts.config,
    // further top-level sections a test turns on (intake, notify...)
    ...opts.extra,
  });
  const logs: string[] = [];
  const logger = createLogger({ level: "debug", destination: { write: (l: string) => void logs.push(l) } });
  let next = config;
  const gwOpts = {
    service: { baseUrl: emu.baseUrl, caFile: emu.caFile, ...(opts.adminKey ? { adminKey: TEST_KEYS.admin } : {}) },
    logger,
    clock: opts.clock,
    webAuthFailureDelayMs: opts.authFailureDelayMs ?? 10,
    reloadConfig: () => next,
  };
  // a PostgreSQL queue is opened by Gateway.open; SQLite as the other console tests always did
  const gw = opts.database ? await Gateway.open(config, gwOpts) : new Gateway(config, gwOpts);
  const addr = await gw.start();
  const base = `${tls ? "https" : "http"}://127.0.0.1:${addr.web!.port}`;
  return {
    emu,
    gw,
    base,
    dir,
    logs,
    caFile,
    smtpPort: addr.smtp[0]!.port,
    async reloadWith(change) {
      next = change(next);
      await gw.reload();
    },
    async stop() {
      await gw.stop();
      await emu.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Signs in with fetch; answers the session cookie ("name=value") and the CSRF token. */
export async function signIn(
  base: string,
  user: string,
  password: string,
): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const r = await fetch(`${base}/login`, { method: "POST", body: new URLSearchParams({ user, password }) });
  if (r.status !== 200) throw new Error(`sign-in as ${user}: ${r.status} ${await r.text()}`);
  const setCookie = r.headers.get("set-cookie") ?? "";
  const body = (await r.json()) as { csrfToken: string };
  return { cookie: setCookie.split(";")[0]!, csrf: body.csrfToken, setCookie };
}
