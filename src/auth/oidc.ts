// The console's OpenID Connect relying party, through openid-client's front door: discovery,
// the authorization code grant with PKCE, state and nonce (openid-client checks the ID token's
// signature, issuer, audience, expiry and nonce), and RP-initiated logout where the provider
// offers it. What the claims must say for faxgate to let the person in is in oidc-claims.ts.
import { readFileSync } from "node:fs";
import * as client from "openid-client";
import { Agent, fetch as undiciFetch } from "undici";

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  /** an extra trusted CA (PEM file) */
  caFile?: string;
}

/** What one sign-in under way must remember between the redirect and the callback. */
export interface OidcPending {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export class OidcRelyingParty {
  private config: Promise<client.Configuration> | null = null;

  constructor(
    private readonly settings: OidcSettings,
    /** the console's own callback address (web.publicUrl + /oidc/callback), known once it listens */
    private readonly redirectUri: () => string,
  ) {}

  /** The provider's address to send the browser to, and what the callback must find again. */
  async start(): Promise<{ url: URL; pending: OidcPending }> {
    const config = await this.discovered();
    const pending = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      codeVerifier: client.randomPKCECodeVerifier(),
    };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri(),
      scope: "openid email profile",
      code_challenge: await client.calculatePKCECodeChallenge(pending.codeVerifier),
      code_challenge_method: "S256",
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url, pending };
  }

  /** The callback's address checked and its code exchanged: the ID token's claims (throws on any fault). */
  async finish(callbackUrl: URL, pending: OidcPending): Promise<{ claims: Record<string, unknown>; idToken: string }> {
    const config = await this.discovered();
    const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims || !tokens.id_token) throw new Error("the provider sent no ID token");
    return { claims: { ...claims }, idToken: tokens.id_token };
  }

  /** Where to send the browser to sign out at the provider too, or null when it offers no end_session_endpoint. */
  async endSessionUrl(afterUrl: string, idToken?: string): Promise<URL | null> {
    const config = await this.discovered();
    if (!config.serverMetadata().end_session_endpoint) return null;
    return client.buildEndSessionUrl(config, {
      post_logout_redirect_uri: afterUrl,
      client_id: this.settings.clientId,
      ...(idToken ? { id_token_hint: idToken } : {}),
    });
  }

  /** Discovery once; a failed one is tried again at the next sign-in (the provider may be back). */
  private discovered(): Promise<client.Configuration> {
    if (!this.config) {
      const { issuer, clientId, clientSecret, caFile } = this.settings;
      const options: client.DiscoveryRequestOptions = {};
      if (caFile) {
        const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, "utf8") } });
        options[client.customFetch] = (url, init) =>
          undiciFetch(url, { ...(init as object), dispatcher }) as unknown as Promise<Response>;
      }
      const auth = clientSecret ? client.ClientSecretBasic(clientSecret) : client.None();
      this.config = client.discovery(new URL(issuer), clientId, undefined, auth, options).then((config) => {
        if (options[client.customFetch]) config[client.customFetch] = options[client.customFetch];
        return config;
      });
      this.config.catch(() => {
        this.config = null;
      });
    }
    return this.config;
  }
}
