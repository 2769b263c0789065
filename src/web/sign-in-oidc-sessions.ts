// What console sign-in through the OpenID provider is given, and the sessions it began with their
// ID token: sign-out then also sends the browser to the provider's end_session_endpoint with it
// (id_token_hint). Kept in memory: a gateway that restarted (or another of a fleet) signs out of
// faxgate only, which is what the session store promises anyway.
import type { OidcRelyingParty } from "../auth/index.js";
import type { WebConfig } from "../config/index.js";

export interface OidcSignIn {
  rp: OidcRelyingParty;
  rules: NonNullable<WebConfig["oidc"]>;
  /** the console's own address, for the provider's redirects back (known once it listens) */
  publicUrl: () => string;
}

// bounded memory: the oldest are forgotten first
const MAX_KEPT = 10_000;

export class OidcSessions {
  private readonly idTokens = new Map<string, string>();

  remember(sessionId: string, idToken: string): void {
    this.idTokens.set(sessionId, idToken);
    while (this.idTokens.size > MAX_KEPT) this.idTokens.delete(this.idTokens.keys().next().value!);
  }

  /** The session's ID token when the provider began it (then forgotten), else undefined. */
  take(sessionId: string): string | undefined {
    const t = this.idTokens.get(sessionId);
    this.idTokens.delete(sessionId);
    return t;
  }
}
