// The webhook tests' gateway, made by the one builder (test/helpers/gateway.ts): its receiver on a
// free port, polling an hour away so only a push can move a fax.
import { request } from "undici";
import type { Gateway } from "../../src/main.js";
import { apiFor, form, type Api } from "../emulator/api.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import type { WireJson } from "../helpers/wire-json.js";

export const PASSWORD = "correct-horse-battery-staple";
export const AUTH = `Basic ${Buffer.from(`faxgate:${PASSWORD}`).toString("base64")}`;

/** An event pushed as the service does (JSON, with the receiver's credentials); its HTTP status. */
export async function postEvent(url: string, body: unknown): Promise<number> {
  const r = await request(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json", authorization: AUTH },
  });
  await r.body.dump();
  return r.statusCode;
}

export interface WebhookRig extends TestGateway {
  /** the emulator's API, for its inbound door */
  api: Api;
  /** the receiver's port, and its URL */
  port: number;
  hookUrl: string;
}

export async function startWebhookRig(opts: {
  /** how long the emulator takes to finish a fax */
  delayMs: number;
  /** log at fatal only, keeping no lines */
  quiet?: boolean;
  /** runs after the gateway is built and before it starts (jobs for its first look) */
  beforeStart?: (gw: Gateway, dir: string) => Promise<void>;
}): Promise<WebhookRig> {
  const g = await startGateway({
    name: "wh",
    emulator: { delayMs: opts.delayMs },
    log: opts.quiet ? "quiet" : "debug",
    beforeStart: opts.beforeStart,
    config: ({ dir }) => ({
      queue: { pollInterval: "1h" },
      notify: { from: "faxgate@example.com", transport: `outbox:${dir}/outbox`, inbound: { interval: "1h" } },
      users: [{ name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice }],
      webhooks: {
        listen: "127.0.0.1:0",
        url: "https://fax.example.com/faxgate/events",
        username: "faxgate",
        password: PASSWORD,
        pollInterval: "1h",
      },
    }),
  });
  const api = apiFor(g.emu);
  const stopGateway = g.stop;
  return Object.assign(g, {
    api,
    port: g.addresses.webhooks!.port,
    hookUrl: `${g.url("webhooks")}/faxgate/events`,
    stop: async () => {
      await api.close();
      await stopGateway();
    },
  });
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
