// Run: node --import tsx test/helpers/log-stdout-child.ts LINES PAD_BYTES (with an IPC channel)
// Writes LINES lines through createLogger's stdout as the daemon does, after a Worker has made fd 1
// non-blocking as the daemon's threads do. Tells its parent when the calls have returned, then
// ticks until the parent says "end" (so the parent sees the event loop turn while it does not read).
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { createLogger } from "../../src/log/logger.js";

const [lines, pad] = process.argv.slice(2).map(Number);
const worker = new Worker("void 0", { eval: true });
await once(worker, "exit");
const log = createLogger({ format: "json", level: "info" });
const text = "x".repeat(pad);
for (let i = 0; i < lines; i += 1) log.info({ i, text }, "line");
process.send!({ written: lines });
let ticks = 0;
const timer = setInterval(() => process.send!({ tick: ++ticks }), 5);
process.on("message", (m) => {
  if (m !== "end") return;
  clearInterval(timer);
  process.disconnect();
});
