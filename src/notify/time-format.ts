// Times and durations as people read them: the one formatter of each, in src/format.ts.
export { duration as formatDuration, localTime as formatTime, plural } from "../format.js";
