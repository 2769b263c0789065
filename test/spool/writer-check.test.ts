// What `faxgate config check` tells the admin about who may write each person's spool folder:
// accounts resolved with getent (a real passwd lookup), the default named as the folder, and a
// warning for a group-writable folder nobody is mapped to or a listed account that does not exist.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempFolder } from "../tmp-dir.js";

const dir = tempFolder("writers");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("config check names each person's writers and warns where none is mapped to a shared folder", async () => {
  const root = path.join(dir, "spool");
  // "fgnoaccount" has no local account; "daemon" and "nobody" are Debian's own
  mkdirSync(path.join(root, "fgnoaccount"), { recursive: true });
  chmodSync(path.join(root, "fgnoaccount"), 0o770); // as faxgate makes it, whatever the umask
  const file = path.join(dir, "faxgate.yaml");
  writeFileSync(
    file,
    [
      "api: {baseUrl: https://api.example.com}",
      `data: ${path.join(dir, "data")}`,
      `spool: {root: ${root}}`,
      "users:",
      "  - {name: fgnoaccount, email: a@example.com, apiKey: k-one}",
      "  - {name: daemon, email: d@example.com, apiKey: k-two}",
      "  - {name: carol, email: c@example.com, apiKey: k-three, localAccounts: [nobody, fgnosuchaccount]}",
      "",
    ].join("\n"),
  );
  const check = await runCli(["config", "check", "--config", file]);
  expect(check.code, check.stderr).toBe(0);
  expect(check.stderr).toMatch(
    /warning: spool writers of fgnoaccount: only files written by faxgate .*is group-writable \(0770\) but no local account is mapped to fgnoaccount/,
  );
  expect(check.stderr).toMatch(
    /note: spool writers of daemon: files written by daemon \(uid 1\) \(the account named as the folder\)/,
  );
  expect(check.stderr).toMatch(
    /warning: spool writers of carol: files written by nobody \(uid 65534\) or by faxgate; no such account: fgnosuchaccount/,
  );
  expect(check.stdout).toContain("localAccounts:");
}, 60_000);
