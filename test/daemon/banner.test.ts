// The sandbox banner's own lines, pasted: every indented command line of the banner is run with
// bash, verbatim, in the folder where `faxgate start` was started, and must produce a job. A line
// whose tool is not installed is skipped with a message (.ci/run installs swaks and curl).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox, type Sandbox } from "../helpers/cli.js";
import { waitUntil } from "../helpers/wait.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";

async function jobCount(cwd: string): Promise<number> {
  const store = SqliteStore.open({ dataDir: path.join(cwd, "data") });
  try {
    return (await store.listJobs({})).length;
  } finally {
    store.close();
  }
}

function hasTool(tool: string): boolean {
  return spawnSync("bash", ["-c", `command -v ${tool}`]).status === 0;
}

describe("the sandbox banner, pasted line by line", () => {
  let sandbox: Sandbox;
  let cwd: string;
  let banner: string;

  beforeAll(async () => {
    sandbox = await startSandbox("faxgate-banner-");
    cwd = sandbox.cwd;
    banner = sandbox.banner;
  }, 90_000);

  afterAll(() => sandbox?.stop());

  it("names no file the user does not have, and every command line makes a job", async () => {
    const lines = banner
      .split("\n")
      .filter((l) => /^ {4}\S/.test(l))
      .map((l) => l.trim());
    // swaks, printf | curl, cp: the three ways in
    expect(lines.map((l) => l.split(" ")[0])).toEqual(["swaks", "printf", "cp"]);
    expect(banner).not.toMatch(/some\.pdf/);
    for (const line of lines) {
      const tool = line.startsWith("printf") ? "curl" : line.split(" ")[0]!;
      if (!hasTool(tool)) {
        console.warn(
          `banner test: skipping a line because ${tool} is not installed (apt-get install ${tool}): ${line}`,
        );
        continue;
      }
      const before = await jobCount(cwd);
      const r = spawnSync("bash", ["-c", line], { cwd, encoding: "utf8", timeout: 30_000 });
      expect(r.status, `${line}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
      if (tool === "curl")
        expect(r.stdout, "the curl line shows the reply with the job id").toMatch(/^< 250 2\.0\.0 .*\S/m);
      if (tool === "swaks") {
        expect(r.stdout).toMatch(/<-\s+250 2\.0\.0 /);
        // as pasted, no warning to puzzle over (swaks deprecates a bare --attach FILE)
        expect(`${r.stdout}${r.stderr}`).not.toMatch(/WARNING/i);
      }
      await waitUntil(async () => (await jobCount(cwd)) > before, `a job from: ${line}`, 30_000);
      const store = SqliteStore.open({ dataDir: path.join(cwd, "data") });
      try {
        const job = (await store.listJobs({ limit: 1 }))[0]!;
        expect(job.state, `${line}: ${job.corruptReason ?? ""}`).not.toBe("corrupt");
        if (tool !== "curl") expect(job.documents.map((d) => d.contentType)).toContain("application/pdf");
        // the file keeps its own name, never "@data/sample.pdf"
        if (tool === "swaks") expect(job.documents.map((d) => d.name)).toEqual(["sample.pdf"]);
      } finally {
        store.close();
      }
    }
  }, 120_000);

  it("prints the web console with a demo sign-in that works as printed", async () => {
    const m = /Web console\s+(http:\/\/\S+)\s+sign in as (\S+), password (\S+)/.exec(banner);
    expect(m, banner).not.toBeNull();
    const r = await fetch(new URL("/login", m![1]), {
      method: "POST",
      body: new URLSearchParams({ user: m![2]!, password: m![3]! }),
    });
    expect(r.status, await r.clone().text()).toBe(200);
    expect(((await r.json()) as { csrfToken?: string }).csrfToken).toMatch(/\S{20,}/);
  });
});
