// The face of connectors/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { namePart } from "./naming.js";
export { DeliveryQueue } from "./queue.js";
export { connectorTarget, kindLabel } from "./targets.js";
