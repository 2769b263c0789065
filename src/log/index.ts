// The face of log/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { childLog, deferredChild, silentLogger } from "./logger.js";
export type { Logger } from "./logger.js";
