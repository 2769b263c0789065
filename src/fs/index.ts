// The face of fs/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export {
  FLUSH_ON_CLOSE,
  fsyncDir,
  readOrMakeOnce,
  replaceFile,
  syncFile,
  tempNameFor,
  writeFileAtomic,
} from "./atomic.js";
export { findExecutable } from "./executable.js";
export { callsFor, poolCalls } from "./folder-calls.js";
export type { FolderCalls } from "./folder-calls.js";
export { GroupSync } from "./group-sync.js";
export { pipeChain } from "./pipe-chain.js";
