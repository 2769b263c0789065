// Console sign-in through an OpenID provider, end to end: from GET /oidc/start to the session
// cookie, with the provider's login page and consent in between (oidc-provider on loopback over
// HTTPS, test/helpers/oidc.ts), as a browser follows the redirects, cookies kept per site. p50
// and p99 of the whole round trip (discovery is done once, before the timing). Not run in CI.
// Alone: node --import tsx bench/oidc-sign-in.bench.ts (FAXGATE_BENCH_OIDC_SIGNINS=5 for a small run)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { configSchema } from "../src/config/schema.js";
import { silentLogger } from "../src/log/logger.js";
import { Gateway } from "../src/main.js";
import { startTestEmulator, TEST_KEYS } from "../test/helpers/emulator.js";
import { freePort } from "../test/helpers/net.js";
import { startOidcProvider, takeCookies } from "../test/helpers/oidc.js";
import type { BenchResult } from "./types.js";

const SIGNINS = Number(process.env.FAXGATE_BENCH_OIDC_SIGNINS ?? 200);

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

/** Follows redirects from `start` as a browser does, cookies kept per host; answers the console's session cookie. */
async function browse(start: string, dispatcher: Agent, consoleOrigin: string): Promise<string> {
  const jar = new Map<string, Map<string, string>>();
  let url = new URL(start);
  let method: "GET" | "POST" = "GET";
  let body: string | undefined;
  for (let hop = 0; hop < 20; hop++) {
    const cookies = jar.get(url.host) ?? new Map<string, string>();
    jar.set(url.host, cookies);
    const r = await request(url, {
      method,
      body,
      dispatcher,
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; "),
        ...(body ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      },
    });
    takeCookies(cookies, r.headers["set-cookie"]);
    const text = await r.body.text();
    method = "GET";
    body = undefined;
    if (r.statusCode >= 300 && r.statusCode < 400) {
      url = new URL(String(r.headers.location), url);
      if (url.origin === consoleOrigin && url.pathname === "/") {
        const session = jar.get(new URL(consoleOrigin).host)?.get("faxgate_session");
        if (!session) throw new Error("signed in without a session cookie");
        return session;
      }
      continue;
    }
    // the provider's login page: the account, with a second factor
    const form = /action="([^"]+)"/.exec(text);
    if (r.statusCode === 200 && form) {
      url = new URL(form[1]!, url);
      method = "POST";
      body = "account=alice&mfa=on";
      continue;
    }
    throw new Error(`sign-in stopped at ${url.pathname}: ${r.statusCode} ${text.slice(0, 200)}`);
  }
  throw new Error("too many redirects");
}

export default async function bench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-oidc-"));
  const port = await freePort();
  const consoleOrigin = `http://127.0.0.1:${port}`;
  const provider = await startOidcProvider({
    accounts: { alice: { email: "alice@example.com", groups: ["fax-users"] } },
    redirectUri: `${consoleOrigin}/oidc/callback`,
    postLogoutRedirectUri: `${consoleOrigin}/login.html`,
  });
  const emu = await startTestEmulator({ delayMs: 1000 });
  const config = configSchema.parse({
    api: { baseUrl: emu.baseUrl, caFile: emu.caFile },
    data: path.join(dir, "data"),
    web: {
      listen: `127.0.0.1:${port}`,
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        caFile: provider.caFile,
        groups: ["fax-users"],
        requireMfa: true,
      },
    },
    users: [{ name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice }],
  });
  const gw = new Gateway(config, { logger: silentLogger(), service: { baseUrl: emu.baseUrl, caFile: emu.caFile } });
  const dispatcher = new Agent({ connect: { ca: readFileSync(provider.caFile, "utf8") } });
  try {
    await gw.start();
    // discovery and the first connections, outside the timing
    await browse(`${consoleOrigin}/oidc/start`, dispatcher, consoleOrigin);
    const times: number[] = [];
    for (let i = 0; i < SIGNINS; i++) {
      const t0 = performance.now();
      await browse(`${consoleOrigin}/oidc/start`, dispatcher, consoleOrigin);
      times.push(performance.now() - t0);
    }
    return [
      {
        figure: "console sign-in via OIDC (start -> provider login -> callback -> session), p50 / p99",
        value: Number(pct(times, 50).toFixed(1)),
        unit: `ms (p99 ${pct(times, 99).toFixed(1)} ms)`,
        note: `oidc: ${SIGNINS} sequential sign-ins against oidc-provider on loopback (HTTPS), ID token checked, ledger row each.`,
      },
    ];
  } finally {
    await gw.stop();
    await emu.stop();
    await provider.stop();
    await dispatcher.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const r of await bench()) process.stdout.write(`${r.figure}: ${r.value} ${r.unit}\n`);
}
