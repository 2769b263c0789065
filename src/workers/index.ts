// The face of workers/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { ChildLimitError, childPool, startThread, threadPool } from "./off-thread.js";
export type { ChildPool } from "./off-thread.js";
export { groupGone, killGroup, planSandbox, unreachableBy } from "./sandbox.js";
export type { SandboxMode, SandboxPlan } from "./sandbox.js";
export { NO_MEMORY_LIMIT, runSandboxed, spawnSandboxed } from "./sandboxed-child.js";
