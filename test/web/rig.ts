// The console tests' gateway, made by the one builder (test/helpers/gateway.ts): the web console on
// a free port, SMTP on another, users alice and bob (plain users, each with their own key), ops
// (role admin) and nopass (no console password).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, CDPSession, Page } from "playwright-core";
import { hashPassword } from "../../src/auth/password.js";
import { ensureCertificate } from "../../src/emulator/certificate.js";
import type { Clock } from "../../src/clock.js";
import type { SeedData } from "../../src/emulator/emulator.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { mergeSections, type GatewayInProcessSpec, type Sections } from "../helpers/gateway.js";

export const PASSWORDS = { alice: "alice-web-secret-1", bob: "bob-web-secret-2", ops: "ops-web-secret-3" } as const;
const HASHES = await (async () => ({
  alice: await hashPassword(PASSWORDS.alice),
  bob: await hashPassword(PASSWORDS.bob),
  ops: await hashPassword(PASSWORDS.ops),
}))();

export const CONSOLE_USERS = [
  { name: "alice", email: "alice@example.com", apiKey: TEST_KEYS.alice, password: HASHES.alice },
  { name: "bob", email: "bob@example.com", apiKey: TEST_KEYS.bob, password: HASHES.bob },
  { name: "ops", email: "admin@example.com", apiKey: TEST_KEYS.admin, password: HASHES.ops, role: "admin" },
  { name: "nopass", email: "nopass@example.com", apiKey: TEST_KEYS.aliceBase },
];

/** The spec for startGateway: the console's sections, then `config` merged over them. */
/** The folder a console gateway made with `outbox: true` writes its mail to (removed with the gateway's). */
export function outboxOf(rig: { dir: string }): string {
  return path.join(rig.dir, "outbox");
}

/**
 * The mails written to outbox folder `outbox` so far, as text: header lines unfolded,
 * quoted-printable's soft line breaks joined and `=3D` undone. Only finished `.eml` files: the
 * outbox writes each under a dotted `.tmp` name and renames it, so a `.tmp` listed may be gone
 * before it is read.
 */
export function outboxMails(outbox: string): string[] {
  return existsSync(outbox)
    ? readdirSync(outbox)
        .filter((n) => n.endsWith(".eml"))
        .map((n) =>
          readFileSync(path.join(outbox, n), "utf8")
            .replace(/\r?\n[ \t]+/g, " ")
            .replace(/=\r?\n/g, "")
            .replace(/=3D/g, "="),
        )
    : [];
}

export function consoleGateway(
  opts: {
    /** serve https with a certificate made in the folder (its CA: `consoleCa(gw)`) */
    tls?: boolean;
    /** the emulator's time to finish a fax (default 300 ms) */
    delayMs?: number;
    clock?: Clock;
    /** the emulator's account (default TEST_SEED) */
    seed?: SeedData;
    config?: Sections;
    /** mail written to `<folder>/outbox` (notify.transport), read back with `outboxOf(rig)` */
    outbox?: boolean;
  } = {},
): GatewayInProcessSpec {
  return {
    name: "web",
    emulator: { delayMs: opts.delayMs ?? 300, seed: opts.seed },
    clock: opts.clock,
    prepare: opts.tls ? (dir) => ensureCertificate(dir).then(() => undefined) : undefined,
    config: ({ dir }) =>
      mergeSections(
        {
          queue: { pollInterval: "200ms" },
          web: {
            listen: "127.0.0.1:0",
            livePoll: "200ms",
            ...(opts.tls ? { tls: { cert: path.join(dir, "ca.pem"), key: path.join(dir, "key.pem") } } : {}),
          },
          smtp: { listen: ["127.0.0.1:0"], domains: ["fax.example.com"] },
          users: CONSOLE_USERS,
        },
        mergeSections(opts.config ?? {}, opts.outbox ? { notify: { transport: `outbox:${outboxOf({ dir })}` } } : {}),
      ),
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

/**
 * A page in a new context of `browser` with Chromium's virtual authenticator (CDP WebAuthn): a
 * passkey device that is present and verifies its user, as a laptop's built-in one.
 */
export async function pageWithPasskeyDevice(
  browser: Browser,
): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { page, cdp, authenticatorId };
}
