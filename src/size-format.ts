// Sizes as people read them in refusals: the one formatter, in src/format.ts.
export { size as formatSize } from "./format.js";
