// What console sign-in through the OpenID provider is given, and the sessions it began with their
// ID token: sign-out then also sends the browser to the provider's end_session_endpoint with it
// (id_token_hint). Both the sign-ins under way and the ID tokens are in the store, so any gateway
// of a fleet carries on what another began.
import type { OidcRelyingParty, TotpSealer } from "../auth/index.js";
import type { WebConfig } from "../config/index.js";
import {
  type Db,
  type OidcPendingRecord,
  putOidcPending,
  takeOidcPending,
  putOidcIdToken,
  takeOidcIdToken,
} from "../store/index.js";

export interface OidcSignIn {
  rp: OidcRelyingParty;
  rules: NonNullable<WebConfig["oidc"]>;
  /** the console's own address, for the provider's redirects back (known once it listens) */
  publicUrl: () => string;
  /** sign-ins under way, where every gateway of a fleet finds them (the store) */
  pending: PendingSignIns;
  /** the ID tokens of sessions it began, for sign-out at the provider (the store) */
  idTokens: StoredIdTokens;
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

/**
 * The ID tokens of sessions begun through the provider, for RP-initiated logout, in the queue's
 * database: sign-out on any gateway of a fleet finds the token the callback (or the second
 * factor's step, on another gateway) kept. Sealed with a key made from web.oidc.clientSecret (the
 * token carries the person's claims); without a client secret none is kept, and sign-out goes to
 * the provider without the hint.
 */
export class StoredIdTokens {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    private readonly sealer: TotpSealer | null,
  ) {}

  /** The token as kept (sealed), to carry through a second factor's step; null when none is kept. */
  seal(idToken: string): string | null {
    return this.sealer ? this.sealer.seal(idToken) : null;
  }

  /** Keeps `sealed` (from seal()) for session `sessionId` until `until`. */
  async keep(sessionId: string, sealed: string | null, until: number): Promise<void> {
    if (sealed) await putOidcIdToken(this.db, sessionId, sealed, until, this.now());
  }

  /** The session's ID token when the provider began it (then gone), else undefined. */
  async take(sessionId: string): Promise<string | undefined> {
    const sealed = this.sealer ? await takeOidcIdToken(this.db, sessionId, this.now()) : null;
    if (!sealed) return undefined;
    try {
      return this.sealer!.open(sealed);
    } catch {
      // sealed under another client secret (changed since): sign out without the hint
      return undefined;
    }
  }
}
