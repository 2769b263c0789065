// A file faxgate may not read (another user's, mode 0600) once was claimed and then DEFERRED every
// 30 s for ever. Root reads everything, so the watcher runs here in a child process as the
// unprivileged "daemon" user (setpriv), the way the service runs as faxgate; the file is root's.
import { spawn, spawnSync } from "node:child_process";
import { chownSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tempFolder } from "../tmp-dir.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const hasSetpriv = spawnSync("sh", ["-c", "command -v setpriv"], { encoding: "utf8" }).status === 0;
const daemonUid = Number(spawnSync("id", ["-u", "daemon"], { encoding: "utf8" }).stdout.trim() || NaN);
const skip =
  process.getuid?.() !== 0
    ? "not running as root"
    : !hasSetpriv
      ? "setpriv (util-linux) missing"
      : Number.isNaN(daemonUid)
        ? 'no "daemon" user'
        : "";
if (skip) console.warn(`[test/spool/unreadable] SKIPPED: ${skip}; it needs root to run the watcher as another user`);

describe.skipIf(skip !== "")(`a file faxgate may not read${skip ? ` (skipped: ${skip})` : ""}`, () => {
  it("goes to failed/ with a reason naming owner and mode, and is not retried for ever", {
    timeout: 90_000,
  }, async () => {
    const tmp = tempFolder("unreadable");
    chownSync(tmp, daemonUid, daemonUid);
    const script = path.join(tmp, "run.mts");
    writeFileSync(
      script,
      `
      import { existsSync, readFileSync } from 'node:fs';
      import path from 'node:path';
      const { spoolHarness, ALICE } = await import(${JSON.stringify(path.join(here, "harness.ts"))});
      const { waitUntil } = await import(${JSON.stringify(path.join(here, "../helpers/wait.ts"))});
      const h = await spoolHarness({ users: [ALICE] });
      console.log(JSON.stringify({ folder: h.folder() }));
      const name = '15551234567 - secret.pdf';
      const failed = path.join(h.folder(), 'failed');
      try {
        await waitUntil(() => existsSync(path.join(failed, name)) && existsSync(path.join(failed, name + '.reason.txt')), 'failed/', 30000);
        console.log(JSON.stringify({ reason: readFileSync(path.join(failed, name + '.reason.txt'), 'utf8'), jobs: (await h.jobs()).length, work: (await import('node:fs')).readdirSync(path.join(h.folder(), '.work')) }));
      } catch (e) {
        console.log(JSON.stringify({ error: String(e), jobs: (await h.jobs()).length, work: (await import('node:fs')).readdirSync(path.join(h.folder(), '.work')) }));
      }
      await h.close();
    `,
    );
    chownSync(script, daemonUid, daemonUid);
    const child = spawn(
      "setpriv",
      [`--reuid=${daemonUid}`, `--regid=${daemonUid}`, "--clear-groups", process.execPath, "--import", "tsx", script],
      {
        cwd: path.resolve(here, "../.."),
        // the log copy of the test run is root's; this child logs nothing anyway (silent logger)
        env: {
          ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FAXGATE_"))),
          HOME: tmp,
          TMPDIR: tmp,
        },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const lines: Record<string, unknown>[] = [];
    let buf = "";
    let dropped = false;
    const done = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    child.stdout!.setEncoding("utf8").on("data", (s: string) => {
      buf += s;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith("{")) continue;
        const msg = JSON.parse(line) as Record<string, unknown>;
        lines.push(msg);
        if (typeof msg.folder === "string" && !dropped) {
          dropped = true;
          // root's file, mode 0600: the watcher (uid daemon) may move it but never read it
          const f = path.join(msg.folder, "15551234567 - secret.pdf");
          writeFileSync(f, "%PDF-1.4\n% not yours\n%%EOF\n", { mode: 0o600 });
        }
      }
    });
    await done;
    rmSync(tmp, { recursive: true, force: true });
    const result = lines.find((l) => "reason" in l || "error" in l);
    expect(result).toBeDefined();
    expect(result!.error).toBeUndefined();
    expect(String(result!.reason)).toMatch(/not allowed to read it \(it belongs to uid 0 with mode 0600\)/);
    expect(result!.jobs).toBe(0);
    expect(result!.work).toEqual([]);
  });
});
