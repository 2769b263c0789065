// The face of metrics/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { registerQueueGauges, registerTextGauges } from "./gauges.js";
export { apiObserver, Metrics } from "./metrics.js";
export type { ApiCallObserver } from "./metrics.js";
