// A real OpenID provider for the sign-in tests: oidc-provider v9 over HTTPS on loopback, with a
// login page of its own (as a provider has): the person types their account and ticks whether
// they used a second factor, which becomes the ID token's `amr` (["pwd"] or ["pwd", "otp"]).
// Consent is given at once for the one client (a first-party app, as an office registers it).
import https from "node:https";
import Provider from "oidc-provider";
import { ensureCertificate } from "../../src/emulator/certificate.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";

export interface ProviderAccount {
  email: string;
  groups: string[];
}

export interface TestProvider {
  issuer: string;
  caFile: string;
  clientId: string;
  clientSecret: string;
  /** end-session requests the provider answered (RP-initiated logout) */
  logouts: number;
  stop(): Promise<void>;
}

export async function startOidcProvider(opts: {
  /** sub → the person's claims */
  accounts: Record<string, ProviderAccount>;
  redirectUri: string;
  postLogoutRedirectUri: string;
}): Promise<TestProvider> {
  const dir = tempFolder("oidc");
  const cert = await ensureCertificate(dir);
  const server = https.createServer({ key: cert.key, cert: cert.cert });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const issuer = `https://127.0.0.1:${port}`;
  const clientId = "faxgate-console";
  const clientSecret = "test-client-secret-0123456789abcdef";
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [opts.redirectUri],
        post_logout_redirect_uris: [opts.postLogoutRedirectUri],
        response_types: ["code"],
        grant_types: ["authorization_code"],
      },
    ],
    pkce: { required: () => true },
    // the claims in the ID token itself, as Entra ID and Google send email (and Entra groups)
    conformIdTokenClaims: false,
    claims: { openid: ["sub", "groups", "amr", "acr"], email: ["email", "email_verified"], profile: ["name"] },
    findAccount: async (_ctx: unknown, sub: string) => {
      const a = opts.accounts[sub];
      if (!a) return undefined;
      return { accountId: sub, claims: async () => ({ sub, email: a.email, email_verified: true, groups: a.groups }) };
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
    cookies: { keys: ["faxgate-test-provider-cookie-key"] },
  });
  const result = { issuer, caFile: cert.caFile, clientId, clientSecret, logouts: 0 } as TestProvider;
  provider.on("end_session.success", () => {
    result.logouts += 1;
  });
  const callback = provider.callback();
  server.on("request", (req, res) => {
    const m = /^\/interaction\/([^/?]+)(\/login)?/.exec(req.url ?? "");
    if (!m) return callback(req, res);
    interaction(provider, req, res, Boolean(m[2])).catch((err) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  result.stop = async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    removeFolder(dir);
  };
  return result;
}

async function interaction(
  provider: Provider,
  req: import("node:http").IncomingMessage,
  res: import("node:http").ServerResponse,
  submitted: boolean,
): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  if (submitted) {
    const body = new URLSearchParams(await readBody(req));
    const account = body.get("account") ?? "";
    const mfa = body.get("mfa") === "on";
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: account, amr: mfa ? ["pwd", "otp"] : ["pwd"] } },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  if (details.prompt.name === "consent") {
    const grant = new provider.Grant({
      accountId: details.session!.accountId,
      clientId: String(details.params.client_id),
    });
    grant.addOIDCScope(String(details.params.scope));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }
  res.setHeader("content-type", "text/html; charset=utf-8");
  res.end(`<!doctype html><html><body><h1>Test provider: sign in</h1>
<form method="post" action="/interaction/${details.uid}/login">
<label for="account">Account</label><input id="account" name="account">
<label for="mfa">Used a second factor</label><input id="mfa" name="mfa" type="checkbox">
<button type="submit">Continue</button></form></body></html>`);
}

function readBody(req: import("node:http").IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      s += c;
    });
    req.on("end", () => resolve(s));
    req.on("error", reject);
  });
}

/** The console's `web.oidc` section for this provider (raw, as a config file holds it); `over` adds keys (groups, requireMfa). */
export function oidcSection(provider: TestProvider, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    issuer: provider.issuer,
    clientId: provider.clientId,
    clientSecret: provider.clientSecret,
    caFile: provider.caFile,
    ...over,
  };
}

/**
 * A redirect chain's cookies kept as a browser keeps them for one host: each Set-Cookie's name and
 * value taken in (its attributes dropped), an emptied one removed.
 */
export function takeCookies(jar: Map<string, string>, setCookie: string | string[] | undefined): void {
  for (const c of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
    const [pair] = c.split(";");
    const i = pair!.indexOf("=");
    const value = pair!.slice(i + 1);
    if (value === "") jar.delete(pair!.slice(0, i));
    else jar.set(pair!.slice(0, i), value);
  }
}

/** One request of a browser: the jar's cookies sent, its Set-Cookie taken in, no redirect followed. */
export async function browserHop(
  url: URL,
  jar: Map<string, string>,
  dispatcher: import("undici").Dispatcher,
  post?: string,
): Promise<{ status: number; location: string | null; text: string }> {
  const { request } = await import("undici");
  const r = await request(url, {
    method: post ? "POST" : "GET",
    body: post,
    dispatcher,
    headers: {
      cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; "),
      ...(post ? { "content-type": "application/x-www-form-urlencoded" } : {}),
    },
  });
  takeCookies(jar, r.headers["set-cookie"]);
  const location = r.headers.location ? String(r.headers.location) : null;
  return { status: r.statusCode, location, text: await r.body.text() };
}

/**
 * A console sign-in through the test provider as a browser makes it, without Chromium: the
 * console's /oidc/start, the provider's login form for `account` (with a second factor when
 * `mfa`), the callback. Answers the console's session cookie, or throws saying where the chain stopped.
 */
export async function signInThroughProvider(
  origin: string,
  account: string,
  dispatcher: import("undici").Dispatcher,
  opts: { mfa?: boolean } = {},
): Promise<string> {
  const jar = new Map<string, string>();
  const providerJar = new Map<string, string>();
  let hop = await browserHop(new URL(`${origin}/oidc/start`), jar, dispatcher);
  let url = new URL(hop.location ?? "", origin);
  for (let i = 0; i < 10 && url.origin !== origin; i++) {
    hop = await browserHop(url, providerJar, dispatcher);
    const action = /action="([^"]+)"/.exec(hop.text);
    if (hop.status === 200 && action)
      hop = await browserHop(
        new URL(action[1]!, url),
        providerJar,
        dispatcher,
        `account=${account}${opts.mfa ? "&mfa=on" : ""}`,
      );
    if (!hop.location)
      throw new Error(`the provider stopped at ${url.pathname}: ${hop.status} ${hop.text.slice(0, 200)}`);
    url = new URL(hop.location, url);
  }
  hop = await browserHop(url, jar, dispatcher);
  const session = jar.get("faxgate_session");
  if (!session) throw new Error(`no session after the callback: ${hop.status} ${hop.text.slice(0, 200)}`);
  return session;
}
