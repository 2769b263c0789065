// The face of inbound/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { InboxEscalation } from "./escalation.js";
export { InboundPoller } from "./poller.js";
export { pushedFaxHandler } from "./pushed-fax.js";
export { ReceivedFaxIntake } from "./received-intake.js";
export { ReplyRouting } from "./reply-routing.js";
export { TextRouting } from "./text-routing.js";
