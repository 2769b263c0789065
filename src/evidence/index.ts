// The face of evidence/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { EvidenceMaker } from "./evidence-maker.js";
export { loadSigningKey } from "./signing-key.js";
export type { SigningKey } from "./signing-key.js";
