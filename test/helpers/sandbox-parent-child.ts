// Run: FAXGATE_TEST_MARKER=TEXT node --import tsx test/helpers/sandbox-parent-child.ts auto|off DIR
// A daemon stand-in: starts a long-lived sandboxed child (the sandbox the machine allows, or none)
// that leaves a grandchild of its own, its command lines marked with TEXT (which this process's own
// does not hold), prints the child's process group as soon as it is spawned, then waits to be killed.
import { planSandbox, spawnSandboxed } from "../../src/workers/index.js";

const [mode, dir] = process.argv.slice(2) as ["auto" | "off", string];
const marker = process.env.FAXGATE_TEST_MARKER ?? "faxgate-orphan";
const plan = await planSandbox({ mode, command: "/bin/sh" });
const child = spawnSandboxed({
  argv: ["/bin/sh", "-c", `/bin/sh -c 'sleep 600; :' ${marker} & sleep 600`],
  files: [dir],
  memoryMb: 256,
  plan,
  stdio: ["ignore", "pipe", "ignore"],
});
child.stdout?.resume();
console.log(`group ${child.pid}`);
setInterval(() => undefined, 60_000);
