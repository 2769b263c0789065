// The face of mail-auth/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { aligned } from "./alignment.js";
export { headerFields, readHeaderBlock } from "./auth-results.js";
export { judgeTopmost } from "./relay-verdict.js";
export { useSignedMessage } from "./replay.js";
export type { ReplayClaim, ReplayStore } from "./replay.js";
export { messageIdKey, readSignedMessage, verifySignedMessage } from "./signed-message.js";
export type { DkimOutcome, SignedMessage } from "./signed-message.js";
export { checkFresh, checkWritten, recipientsProof } from "./wanted.js";
