// A `faxgate` command loads only what it needs (issue 43 item 9; figures in docs/bench.md, "CLI
// start-up"): `--help` and `send --help` no logger, `jobs` on a SQLite queue neither the PostgreSQL
// driver nor the HTTP client. Each runs in a child process from the compiled CLI, as `faxgate`
// runs; the CommonJS packages a process loaded are the keys of its require cache.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILT_SOURCES, haveBuiltSources } from "../helpers/built-sources.js";
import { runCli } from "../helpers/cli.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
let config: string;
beforeAll(async () => {
  dir = tempFolder("startup");
  const data = path.join(dir, "data");
  mkdirSync(data);
  config = path.join(dir, "faxgate.yaml");
  writeFileSync(
    config,
    `api:\n  baseUrl: sandbox\ndata: ${data}\nusers:\n  - name: alice\n    email: alice@example.com\n    apiKey: k\n`,
  );
  // a queue with one job in it
  const r = await runCli(["send", "--config", config, "--to", "+15551234567", "--notes", "hello"]);
  expect(r.code, r.stderr).toBe(0);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The npm packages a `faxgate` run loaded (CommonJS ones: ESM packages are not in the cache). */
function packagesLoaded(args: string[]): string[] {
  const main = pathToFileURL(path.join(BUILT_SOURCES, "cli", "main.js")).href;
  // printed on exit, however the command ends (commander exits after --help); the command's own
  // output is dropped
  const script = `
    import { createRequire } from "node:module";
    import { writeSync } from "node:fs";
    const cache = createRequire(import.meta.url).cache;
    process.on("exit", () => {
      const names = new Set(Object.keys(cache)
        .map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(f)?.[1]).filter(Boolean));
      writeSync(1, "LOADED " + JSON.stringify([...names]) + "\\n");
    });
    process.stdout.write = () => true;
    process.stderr.write = () => true;
    const { run } = await import(${JSON.stringify(main)});
    await run(["node", "faxgate", ...${JSON.stringify(args)}]).catch(() => {});
    process.exit(0);`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  const m = /LOADED (.*)/.exec(out);
  expect(m, out).not.toBeNull();
  return JSON.parse(m![1]!) as string[];
}

describe.skipIf(!haveBuiltSources())("CLI start-up loads only what the command needs", () => {
  it("jobs on a SQLite queue: no PostgreSQL driver or HTTP client", () => {
    const loaded = packagesLoaded(["jobs", "--config", config]);
    expect(loaded).toContain("better-sqlite3"); // the probe sees what was loaded
    for (const pkg of ["pg", "undici"]) expect(loaded, pkg).not.toContain(pkg);
  });

  it("--help and send --help: commander alone, no logger", () => {
    for (const args of [["--help"], ["send", "--help"]]) {
      const loaded = packagesLoaded(args);
      expect(loaded, args.join(" ")).toContain("commander");
      expect(loaded, args.join(" ")).not.toContain("pino");
    }
  });
});
