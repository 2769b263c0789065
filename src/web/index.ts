// The face of web/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export type { DirectoryPageView } from "./directory-page.js";
export { OperatorPages } from "./operator.js";
export { RefusalLog } from "./refusals.js";
export { WebConsole } from "./server.js";
export { StoredSessionStore } from "./session-store.js";
export { StoredIdTokens, StoredPendingSignIns } from "./sign-in-oidc-sessions.js";
export { callbackUrl } from "./sign-in-oidc.js";
