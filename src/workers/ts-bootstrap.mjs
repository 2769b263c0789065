// Used only when faxgate runs from its TypeScript sources (tests, benches, `tsx`): Node 20 does
// not pass tsx's loader on to worker threads, so the thread loads its module through tsx's API:
// the one thread.ts names in workerData (threadEntry, for startThread and the reader pool alike).
// The built daemon (dist/) runs the compiled files directly and never reads this one.
import { workerData } from "node:worker_threads";
import { tsImport } from "tsx/esm/api";

const named = workerData && typeof workerData === "object" ? workerData["faxgate:threadModule"] : undefined;
if (typeof named !== "string") throw new Error("ts-bootstrap.mjs starts only threads named by thread.ts");
const mod = await tsImport(named, import.meta.url);
export default mod.default;
