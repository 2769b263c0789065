// The face of recipients/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { compactNumberSpec, patternMatches } from "./destination-policy.js";
export type { DestinationCheck } from "./destination-policy.js";
export { formatFaxNumber, normalizeFaxNumber } from "./fax-number.js";
export { decideRecipient, destinationPolicy, recipientNumber } from "./recipients.js";
export type { RecipientDecision } from "./recipients.js";
