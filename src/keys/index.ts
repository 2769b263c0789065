// The face of keys/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { KeyHolds, listKeyHolds } from "./key-holds.js";
export { KeyMinter } from "./key-minter.js";
export { effectiveUsers } from "./key-overrides.js";
export { KeyWatch } from "./key-watch.js";
