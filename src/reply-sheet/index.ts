// The face of reply-sheet/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { verifyReplyCode } from "./reply-code.js";
export { scanForReplyCodes } from "./reply-decode.js";
export { loadReplyKey, replyKeyMade } from "./reply-key.js";
export { ReplySheets } from "./reply-sheets.js";
