// V8's full collection for tests that measure memory, without starting vitest's workers with
// --expose-gc: the flag set at run time exposes `gc` in contexts created afterwards; it is taken
// from one such context and the flag unset again.
import v8 from "node:v8";
import { runInNewContext } from "node:vm";

export function fullCollection(): () => void {
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === "function") return own as () => void;
  v8.setFlagsFromString("--expose-gc");
  try {
    return runInNewContext("gc") as () => void;
  } finally {
    v8.setFlagsFromString("--no-expose-gc");
  }
}
