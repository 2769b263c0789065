// The face of received/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { isFailedReception, keptFaxPayload } from "./notice.js";
export type { InboundPayload } from "./notice.js";
export { RECEIVED_STATES } from "./received-fax.js";
export type { NewReceivedFax, ReceivedEvent, ReceivedFax, ReceivedState } from "./received-fax.js";
