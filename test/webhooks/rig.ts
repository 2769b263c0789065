// One rig for the webhook tests that run a whole gateway: the emulator over HTTPS and a Gateway
// whose receiver listens on a free port, polling an hour away so only a push can move a fax.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { configSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log/logger.js";
import { Gateway } from "../../src/main.js";
import { apiFor, form, type Api } from "../emulator/api.js";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import type { WireJson } from "../helpers/wire-json.js";

export const PASSWORD = "correct-horse-battery-staple";
export const AUTH = `Basic ${Buffer.from(`faxgate:${PASSWORD}`).toString("base64")}`;
const HOUR = 3_600_000;

export interface WebhookRig {
  emu: TestEmulator;
  api: Api;
  gw: Gateway;
  dir: string;
  /** the receiver's port, and its URL */
  port: number;
  url: string;
  /** every log line of the gateway (at `debug`; none when `quiet`) */
  logs: string[];
  stop(): Promise<void>;
}

export async function startWebhookRig(opts: {
  /** how long the emulator takes to finish a fax */
  delayMs: number;
  /** log at fatal only, keeping no lines */
  quiet?: boolean;
  /** runs after the gateway is built and before it starts (jobs for its first look) */
  beforeStart?: (gw: Gateway, dir: string) => Promise<void>;
}): Promise<WebhookRig> {
  const emu = await startTestEmulator({ delayMs: opts.delayMs });
  const api = apiFor(emu);
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-wh-"));
  const config = configSchema.parse({
    api: { baseUrl: emu.baseUrl, caFile: emu.caFile },
    data: path.join(dir, "data"),
    queue: { pollIntervalMs: HOUR },
    notify: {
      from: "faxgate@example.com",
      transport: `outbox:${path.join(dir, "outbox")}`,
      inbound: { intervalMs: HOUR },
    },
    users: [{ name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice }],
    webhooks: {
      listen: "127.0.0.1:0",
      url: "https://fax.example.com/faxgate/events",
      username: "faxgate",
      password: PASSWORD,
      pollIntervalMs: HOUR,
    },
  });
  const logs: string[] = [];
  const logger = opts.quiet
    ? createLogger({ level: "fatal" })
    : createLogger({ level: "debug", destination: { write: (l: string) => void logs.push(l) } });
  const gw = new Gateway(config, { service: { baseUrl: emu.baseUrl, caFile: emu.caFile }, logger });
  await opts.beforeStart?.(gw, dir);
  const port = (await gw.start()).webhooks!.port;
  return {
    emu,
    api,
    gw,
    dir,
    port,
    url: `http://127.0.0.1:${port}/faxgate/events`,
    logs,
    stop: async () => {
      await gw.stop();
      await api.close();
      await emu.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fax received at the service for `email` (the emulator's inbound door); its record. */
export async function receiveFax(api: Api, email = "alice@example.com"): Promise<WireJson> {
  const r = await api.call(
    "POST",
    "/_emulator/inbound",
    TEST_KEYS.admin,
    form({ email, callerId: "+15557654321" }, [["in.txt", "hello"]]),
  );
  return r.json;
}
