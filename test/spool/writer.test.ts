// A file is faxed on the account of the folder's person only when that person (one of their local
// accounts) or faxgate itself wrote it: everyone who drops files shares a group, so without this
// bob could write a PDF into alice's folder and fax it on her key, charged to her, as her.
// Real local accounts (useradd, as root) write the files; the test process is faxgate.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { UserConfig } from "../../src/config/schema.js";
import { createLogger } from "../../src/log/logger.js";
import { throwawayAccount, type LocalAccount } from "../cups/private-cupsd.js";
import { waitUntil } from "../helpers/wait.js";
import { drop, spoolHarness, textPdf, type SpoolHarness } from "./harness.js";

const hasSetpriv =
  spawnSync("sh", ["-c", "command -v setpriv && command -v useradd"], { encoding: "utf8" }).status === 0;
const skip = process.getuid?.() !== 0 ? "not running as root" : !hasSetpriv ? "setpriv or useradd missing" : "";
if (skip) console.warn(`[test/spool/writer] SKIPPED: ${skip}; it needs root to create and write as local accounts`);

let h: SpoolHarness | null = null;
const accounts: LocalAccount[] = [];
let alice: LocalAccount;
let bob: LocalAccount;

beforeAll(() => {
  if (skip) return;
  alice = throwawayAccount("wa");
  bob = throwawayAccount("wb");
  accounts.push(alice, bob);
});
afterAll(() => {
  for (const a of accounts) a.remove();
});
afterEach(async () => {
  await h?.close();
  h = null;
});

const uidOf = (name: string) => Number(spawnSync("id", ["-u", name], { encoding: "utf8" }).stdout.trim());

/** Writes `data` into `dir` as the local account, as Samba or a shell would: a dot-name, then a rename. */
function writeAs(account: LocalAccount, dir: string, name: string, data: Uint8Array): void {
  const r = spawnSync(
    "setpriv",
    [
      `--reuid=${uidOf(account.name)}`,
      `--regid=${account.group}`,
      "--clear-groups",
      "sh",
      "-c",
      'cat > "$1/.$2.part" && mv "$1/.$2.part" "$1/$2"',
      "sh",
      dir,
      name,
    ],
    { input: data, encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`writing as ${account.name} failed: ${r.stderr}`);
}

/** The folders as docs/print.md sets them up: the people who drop files share the folder's group. */
async function start(user: UserConfig, logs: string[], existing?: SpoolHarness): Promise<SpoolHarness> {
  const rig =
    existing ??
    (await spoolHarness({
      users: [user],
      extra: { logger: createLogger({ level: "debug", destination: { write: (l: string) => void logs.push(l) } }) },
    }));
  chmodSync(rig.dir, 0o755);
  chmodSync(rig.root, 0o755);
  const folder = rig.folder(user);
  // the throwaway accounts' group stands for faxgate-print
  chownSync(folder, 0, Number(spawnSync("getent", ["group", alice.group], { encoding: "utf8" }).stdout.split(":")[2]));
  expect(statSync(folder).mode & 0o070).toBe(0o070);
  return rig;
}

describe.skipIf(skip !== "")(`who wrote a spool file${skip ? ` (skipped: ${skip})` : ""}`, () => {
  it("a file another account wrote into alice's folder is refused into failed/ naming the writer, and nothing is queued", {
    timeout: 60_000,
  }, async () => {
    const logs: string[] = [];
    const user: UserConfig = {
      name: "alice",
      email: "alice@example.com",
      aliases: [],
      apiKey: "test-key-alice",
      spool: alice.name,
    };
    h = await start(user, logs);
    const name = "15551234567 - invoice.pdf";
    writeAs(bob, h.folder(user), name, await textPdf([["Invoice 42"]]));
    const failed = path.join(h.folder(user), "failed");
    await waitUntil(
      () => existsSync(path.join(failed, name)) && existsSync(path.join(failed, `${name}.reason.txt`)),
      "failed/",
      20_000,
    );
    expect(readFileSync(path.join(failed, `${name}.reason.txt`), "utf8")).toContain(
      `written by the local account ${bob.name} (uid ${uidOf(bob.name)}), not by alice: faxgate faxes a file only on the account of the person who wrote it`,
    );
    expect(await h.jobs()).toHaveLength(0);
    // the REJECTED line may reach the log just after the file reached failed/
    await waitUntil(
      () => logs.some((l) => l.includes('"REJECTED"') && l.includes(bob.name)),
      "the REJECTED line naming bob",
      10_000,
    );
    expect(logs.join("\n")).not.toContain("Invoice 42");
  });

  it("faxgate makes a person's folder sticky: another account cannot remove the person's waiting file", {
    timeout: 60_000,
  }, async () => {
    const user: UserConfig = {
      name: "alice",
      email: "alice@example.com",
      aliases: [],
      apiKey: "test-key-alice",
      spool: alice.name,
    };
    // not started: the folder is made as at a first start, and nothing takes the file meanwhile
    h = await spoolHarness({ users: [user], start: false });
    await h.watcher.start();
    await h.watcher.stop();
    expect(statSync(h.folder(user)).mode & 0o7777).toBe(0o1770);
    await start(user, [], h);
    await h.watcher.stop();
    writeAs(alice, h.folder(user), "15551234567 - waiting.pdf", await textPdf([["Waiting"]]));
    const rm = spawnSync(
      "setpriv",
      [
        `--reuid=${uidOf(bob.name)}`,
        `--regid=${bob.group}`,
        "--clear-groups",
        "rm",
        "-f",
        path.join(h.folder(user), "15551234567 - waiting.pdf"),
      ],
      { encoding: "utf8" },
    );
    expect(rm.status).not.toBe(0);
    expect(existsSync(path.join(h.folder(user), "15551234567 - waiting.pdf"))).toBe(true);
  });

  it("a file alice's own account wrote is faxed (the account named as her folder, by default)", {
    timeout: 60_000,
  }, async () => {
    const logs: string[] = [];
    const user: UserConfig = {
      name: "alice",
      email: "alice@example.com",
      aliases: [],
      apiKey: "test-key-alice",
      spool: alice.name,
    };
    h = await start(user, logs);
    writeAs(alice, h.folder(user), "15551234567 - mine.pdf", await textPdf([["Mine"]]));
    await waitUntil(async () => (await h!.jobs()).length === 1, "alice's job", 20_000);
    expect((await h.jobs())[0]!.user).toBe("alice");
  });

  it("users[].localAccounts maps other account names, and then the folder's name no longer counts", {
    timeout: 60_000,
  }, async () => {
    const logs: string[] = [];
    // the folder is named as alice's account, but only bob's account is listed for this person
    const user: UserConfig = {
      name: "alice",
      email: "alice@example.com",
      aliases: [],
      apiKey: "test-key-alice",
      spool: alice.name,
      localAccounts: [bob.name],
    };
    h = await start(user, logs);
    writeAs(alice, h.folder(user), "15551234567 - a.pdf", await textPdf([["A"]]));
    writeAs(bob, h.folder(user), "15551234568 - b.pdf", await textPdf([["B"]]));
    const failed = path.join(h.folder(user), "failed");
    await waitUntil(() => existsSync(path.join(failed, "15551234567 - a.pdf.reason.txt")), "a.pdf refused", 20_000);
    await waitUntil(async () => (await h!.jobs()).length === 1, "b.pdf queued", 20_000);
    expect((await h.jobs())[0]!.meta.origin?.file).toBe("15551234568 - b.pdf");
  });

  it("a ticket another account wrote next to alice's file does not re-address it: the file is refused", {
    timeout: 60_000,
  }, async () => {
    const user: UserConfig = {
      name: "alice",
      email: "alice@example.com",
      aliases: [],
      apiKey: "test-key-alice",
      spool: alice.name,
    };
    h = await start(user, []);
    const name = "15551234567 - letter.pdf";
    // bob's ticket first, so it is there when alice's document is taken
    writeAs(bob, h.folder(user), `${name}.json`, new TextEncoder().encode(JSON.stringify({ to: "+15559990000" })));
    writeAs(alice, h.folder(user), name, await textPdf([["Letter"]]));
    const failed = path.join(h.folder(user), "failed");
    await waitUntil(() => existsSync(path.join(failed, `${name}.reason.txt`)), "failed/", 20_000);
    expect(readFileSync(path.join(failed, `${name}.reason.txt`), "utf8")).toMatch(
      new RegExp(`its ticket .*written by the local account ${bob.name} \\(uid \\d+\\), not by alice`),
    );
    expect(await h.jobs()).toHaveLength(0);
  });

  it("a file faxgate itself wrote (the CUPS backend's way) is faxed", { timeout: 60_000 }, async () => {
    const logs: string[] = [];
    const user: UserConfig = {
      name: "alice",
      email: "alice@example.com",
      aliases: [],
      apiKey: "test-key-alice",
      spool: alice.name,
    };
    h = await start(user, logs);
    await drop(h.folder(user), "15551234567 - cups.pdf", await textPdf([["CUPS"]]));
    await waitUntil(async () => (await h!.jobs()).length === 1, "faxgate's own job", 20_000);
  });
});
