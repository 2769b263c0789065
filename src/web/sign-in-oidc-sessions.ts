// What console sign-in through the OpenID provider is given, and the sessions it began with their
// ID token: sign-out then also sends the browser to the provider's end_session_endpoint with it
// (id_token_hint). Kept in memory: a gateway that restarted (or another of a fleet) signs out of
// faxgate only, which is what the session store promises anyway.
import type { OidcRelyingParty } from "../auth/index.js";
import type { WebConfig } from "../config/index.js";
import { type Db, type OidcPendingRecord, putOidcPending, takeOidcPending } from "../store/index.js";

export interface OidcSignIn {
  rp: OidcRelyingParty;
  rules: NonNullable<WebConfig["oidc"]>;
  /** the console's own address, for the provider's redirects back (known once it listens) */
  publicUrl: () => string;
  /** sign-ins under way, where every gateway of a fleet finds them (the store) */
  pending: PendingSignIns;
}

/** Sign-ins begun and not yet called back, by the random id in the browser's cookie. */
export interface PendingSignIns {
  put(id: string, record: OidcPendingRecord, until: number): Promise<void>;
  /** the sign-in, gone from the store as it is read (one use); null when none or expired */
  take(id: string): Promise<OidcPendingRecord | null>;
}

/** In the queue's database: the callback may reach another gateway than the start (no sticky sessions). */
export class StoredPendingSignIns implements PendingSignIns {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  put(id: string, record: OidcPendingRecord, until: number): Promise<void> {
    return putOidcPending(this.db, id, record, until, this.now());
  }

  take(id: string): Promise<OidcPendingRecord | null> {
    return takeOidcPending(this.db, id, this.now());
  }
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
