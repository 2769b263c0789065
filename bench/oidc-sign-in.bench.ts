// Console sign-in through an OpenID provider, end to end: from GET /oidc/start to the session
// cookie, with the provider's login page and consent in between (oidc-provider on loopback over
// HTTPS, test/helpers/oidc.ts), as a browser follows the redirects, cookies kept per site (signInThroughProvider). p50
// and p99 of the whole round trip (discovery is done once, before the timing). Not run in CI.
// Alone: node --import tsx bench/oidc-sign-in.bench.ts (FAXGATE_BENCH_OIDC_SIGNINS=5 for a small run)
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Agent } from "undici";
import { startGateway, type TestGateway } from "../test/helpers/gateway.js";
import { freePort } from "../test/helpers/net.js";
import { oidcSection, signInThroughProvider, startOidcProvider } from "../test/helpers/oidc.js";
import type { BenchResult } from "./types.js";

const SIGNINS = Number(process.env.FAXGATE_BENCH_OIDC_SIGNINS ?? 200);

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

export default async function bench(): Promise<BenchResult[]> {
  const port = await freePort();
  const consoleOrigin = `http://127.0.0.1:${port}`;
  const provider = await startOidcProvider({
    accounts: { alice: { email: "alice@example.com", groups: ["fax-users"] } },
    redirectUri: `${consoleOrigin}/oidc/callback`,
    postLogoutRedirectUri: `${consoleOrigin}/login.html`,
  });
  const dispatcher = new Agent({ connect: { ca: readFileSync(provider.caFile, "utf8") } });
  let tg: TestGateway | null = null;
  try {
    tg = await startGateway({
      name: "bench-oidc",
      emulator: { delayMs: 1000 },
      log: "quiet",
      config: {
        web: {
          listen: `127.0.0.1:${port}`,
          oidc: oidcSection(provider, { groups: ["fax-users"], requireMfa: true }),
        },
      },
    });
    const signIn = () => signInThroughProvider(consoleOrigin, "alice", dispatcher, { mfa: true });
    // discovery and the first connections, outside the timing
    await signIn();
    const times: number[] = [];
    for (let i = 0; i < SIGNINS; i++) {
      const t0 = performance.now();
      await signIn();
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
    await tg?.stop();
    await provider.stop();
    await dispatcher.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const r of await bench()) process.stdout.write(`${r.figure}: ${r.value} ${r.unit}\n`);
}
