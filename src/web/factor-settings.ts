// What the console's second factors are given by the composition root (web/factors.ts uses it).
import type { TotpSealer } from "../auth/index.js";
import type { WebConfig } from "../config/index.js";
import type { SignInFactors, FactorPending } from "../store/index.js";

export interface FactorSettings {
  store: SignInFactors;
  /** sign-ins waiting for their second factor and enrolments under way, where every gateway finds them */
  pending: FactorPending;
  config: WebConfig["factors"];
  /** seals TOTP secrets (web.factors.totpKey); null: TOTP is not offered */
  sealer: TotpSealer | null;
  /** the console's address as people reach it: passkeys are bound to its host name */
  publicUrl: () => string;
}
