// The face of auth/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { AuthLockout, MAX_CLIENT_AUTH_FAILURES, MAX_SESSION_AUTH_FAILURES } from "./auth-lockout.js";
export { buildBlockList, inList, isLoopback, plainAddress } from "./client-address.js";
export { judgeClaims } from "./oidc-claims.js";
export { OidcRelyingParty } from "./oidc.js";
export { authenticated, authenticationOptions, registered, registrationOptions, relyingParty } from "./passkeys.js";
export { verifySignIn } from "./password.js";
export { RateLimiter } from "./rate-limit.js";
export { newTotp, TotpSealer, totpStep } from "./totp.js";
export { liveUserIndex, UserIndex } from "./user-index.js";
