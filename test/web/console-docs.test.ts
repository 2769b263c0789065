// docs/console.md's curl lines, pasted: a sandbox is started as the README says (`faxgate start`
// in an empty folder), and each line of the document's sh block is run with bash in that folder,
// with only the console's address changed to the port the test got. Skips without curl.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox, type Sandbox } from "../helpers/cli.js";

const hasCurl = spawnSync("bash", ["-c", "command -v curl"]).status === 0;
if (!hasCurl) console.warn("console docs test skipped: curl is not installed (apt-get install curl)");

function docLines(): string[] {
  const md = readFileSync(path.resolve(__dirname, "../../docs/console.md"), "utf8");
  const block = /With the sandbox running[^\n]*\n\n```sh\n([\s\S]*?)```/.exec(md);
  if (!block) throw new Error('docs/console.md has no sh block after "With the sandbox running"');
  return block[1]!.trim().split("\n");
}

describe.skipIf(!hasCurl)("docs/console.md curl lines", () => {
  let sandbox: Sandbox;
  let cwd: string;
  let address: string;

  beforeAll(async () => {
    sandbox = await startSandbox("faxgate-console-docs-");
    cwd = sandbox.cwd;
    address = /Web console\s+http:\/\/(\S+?)\//.exec(sandbox.banner)![1]!;
  }, 90_000);

  afterAll(() => sandbox?.stop());

  it("each line works as pasted", () => {
    const lines = docLines().map((l) => l.replaceAll("127.0.0.1:8025", address));
    expect(lines.length).toBeGreaterThanOrEqual(5);
    // one shell, as a person pastes them one after the other (TOKEN and JOB carry over)
    const script: string[] = ["set -e"];
    lines.forEach((line, i) => {
      if (line.includes("/api/events")) script.push(`echo "--- ${i}"`, `timeout 3 ${line} || [ $? = 124 ]`);
      else script.push(`echo "--- ${i}"`, line, "echo");
    });
    const r = spawnSync("bash", ["-c", script.join("\n")], { cwd, encoding: "utf8", timeout: 60_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const out = r.stdout
      .split(/^--- \d+$/m)
      .slice(1)
      .map((s) => s.trim());
    // line 1: the upload answers the new job; line 2: the search finds it
    expect(JSON.parse(out[1]!)).toMatchObject({
      user: "demo",
      cover: { subject: "Hello" },
      documents: [{ name: "sample.pdf" }],
    });
    const found = JSON.parse(out[2]!) as Array<{ id: string }>;
    expect(found.map((j) => j.id)).toContain(JSON.parse(out[1]!).id);
    // line 4: the cancel answers the job, or (too late) why not
    const cancel = JSON.parse(out[4]!) as { state?: string; error?: string };
    expect(
      cancel.state === "cancelled" ||
        /only queued, deferred, held or parked recipients can be cancelled/.test(cancel.error ?? ""),
      out[4],
    ).toBe(true);
    // line 5: the event stream opened
    expect(out[5]).toMatch(/^: live/);
  }, 90_000);
});
