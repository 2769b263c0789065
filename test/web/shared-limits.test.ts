// Lockouts and rates counted once by a fleet (issue 55): two gateways on one PostgreSQL, the
// counters in the store through rate-limiter-flexible. Wrong passwords spread over both lock the
// address at the configured count (10), not at twice it; a person's faxes a minute are one
// allowance over both consoles, refused with the same 429 as on one gateway. Skips without
// PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_CLIENT_AUTH_FAILURES } from "../../src/auth/auth-lockout.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { TEST_PDF } from "../helpers/store.js";
import { consoleGateway, PASSWORDS, signIn } from "./rig.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("shared lockouts and rates");

const FAXES_PER_MINUTE = 4;
let gateways: TestGateway[] = [];
beforeAll(async () => {
  if (postgres.missing) return;
  const database = await postgres.database();
  const spec = consoleGateway({ config: { database, smtp: { maxMessagesPerMinute: FAXES_PER_MINUTE } } });
  gateways = [await startGateway(spec), await startGateway(spec)];
}, 120_000);
afterAll(async () => {
  for (const g of gateways) await g.stop();
});

const login = (base: string, user: string, password: string) =>
  fetch(`${base}/login`, { method: "POST", body: new URLSearchParams({ user, password }) });

describe.skipIf(postgres.missing)("lockouts and rates across two gateways on one PostgreSQL", () => {
  it("a person's faxes a minute are one allowance over both consoles", async () => {
    // first: the next test locks the loopback address out
    const [a, b] = gateways.map((g) => g.url("web")) as [string, string];
    const statuses: number[] = [];
    const sa = await signIn(a, "alice", PASSWORDS.alice);
    for (let i = 0; i < FAXES_PER_MINUTE + 1; i++) {
      const fd = new FormData();
      fd.append("to", "+15550107777");
      fd.append("files", new Blob([TEST_PDF], { type: "application/pdf" }), "page.pdf");
      const r = await fetch(`${i % 2 === 0 ? a : b}/api/faxes`, {
        method: "POST",
        headers: { cookie: sa.cookie, "x-csrf-token": sa.csrf },
        body: fd,
      });
      statuses.push(r.status);
      if (r.status === 429) expect(await r.json()).toMatchObject({ error: expect.stringMatching(/too many faxes/) });
    }
    expect(statuses).toEqual([...Array.from({ length: FAXES_PER_MINUTE }, () => 200), 429]);
  }, 60_000);
  it("wrong passwords spread over both gateways lock the address at the configured count", async () => {
    const [a, b] = gateways.map((g) => g.url("web")) as [string, string];
    const answers: number[] = [];
    for (let i = 0; i < MAX_CLIENT_AUTH_FAILURES + 2; i++)
      answers.push((await login(i % 2 === 0 ? a : b, "bob", `wrong-${i}`)).status);
    expect(answers).toEqual([...Array.from({ length: MAX_CLIENT_AUTH_FAILURES }, () => 401), 429, 429]);
    // locked on both, even for the right password
    for (const base of [a, b]) {
      const r = await login(base, "bob", PASSWORDS.bob);
      expect(r.status).toBe(429);
      expect(await r.json()).toMatchObject({
        error: expect.stringMatching(/too many failed sign-ins from your address/),
      });
    }
  }, 60_000);
});
