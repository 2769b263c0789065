// Node's flags for faxgate live in one place, bin/faxgate.js's first line, and reach every way the
// daemon starts: a shell or npm's bin link runs the file, systemd/faxgate.service and the
// container's entrypoint run the file itself (`node FILE` would drop the flags), and the daemon
// bench puts the same flags in front of its own node (bench/lib/daemon.ts).
import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { entryNodeFlags } from "../../bench/lib/daemon.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const entry = readFileSync(path.join(repo, "bin/faxgate.js"), "utf8");
const shebang = entry.split("\n", 1)[0]!;

describe("bin/faxgate.js's node flags", () => {
  it("reach node when the file is run as a program, and are what the bench gives its daemon", () => {
    // the entry point's own first line over a body that shows what node was started with
    const dir = tempFolder("entry-flags");
    const script = path.join(dir, "entry.mjs");
    writeFileSync(script, `${shebang}\nconsole.log(JSON.stringify(process.execArgv));\n`);
    chmodSync(script, 0o755);
    let out: string;
    try {
      out = execFileSync(script, [], {
        encoding: "utf8",
        // a line the kernel and env do not split as meant can loop instead of failing
        timeout: 20_000,
        env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` },
      });
    } finally {
      removeFolder(dir);
    }
    const flags = JSON.parse(out) as string[];
    expect(flags).toContain("--max-semi-space-size=32");
    expect(entryNodeFlags()).toEqual(flags);
  });

  it("are not bypassed by the service unit or the container's entrypoint", () => {
    const unit = readFileSync(path.join(repo, "systemd/faxgate.service"), "utf8");
    expect(/^ExecStart=(\S+)/m.exec(unit)?.[1]).toBe("/opt/faxgate/bin/faxgate.js");
    const script = readFileSync(path.join(repo, "docker/entrypoint.sh"), "utf8");
    const runs = script.split("\n").filter((l) => l.includes("bin/faxgate.js") && !l.trim().startsWith("#"));
    expect(runs.length).toBeGreaterThan(0);
    for (const l of runs) expect(l.trim()).toMatch(/^exec \/opt\/faxgate\/bin\/faxgate\.js /);
  });
});
