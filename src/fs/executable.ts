// A command's path on PATH (or the path given), if it is an executable file there: what `which`
// answers, without a child process.
import { accessSync, constants as fsConstants, statSync } from "node:fs";
import path from "node:path";

/** Finds an executable in PATH (or checks a given path); null when there is none. */
export function findExecutable(cmd: string, envPath = process.env.PATH ?? ""): string | null {
  const candidates = cmd.includes("/")
    ? [cmd]
    : envPath
        .split(path.delimiter)
        .filter(Boolean)
        .map((d) => path.join(d, cmd));
  for (const c of candidates) {
    try {
      if (!statSync(c).isFile()) continue;
      accessSync(c, fsConstants.X_OK);
      return c;
    } catch {
      // not here
    }
  }
  return null;
}
