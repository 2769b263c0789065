// A private Samba server for one test file: its own smb.conf, folders and passdb in a temp folder,
// listening on a free loopback port, one share and one user (the current Unix user, as pdbedit
// requires an existing one). Where smbd or smbclient is absent, `sambaAvailable()` says why and
// the tests skip with that message.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import path from "node:path";
import { freePort } from "./net.js";
import { waitUntil } from "./wait.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";

const which = (bin: string): boolean => spawnSync("sh", ["-c", `command -v ${bin}`]).status === 0;

export function sambaAvailable(): string | null {
  for (const bin of ["smbd", "smbclient", "pdbedit"])
    if (!which(bin) && !which(`/usr/sbin/${bin}`)) return `${bin} is not installed: apt-get install samba smbclient`;
  return null;
}

export interface Samba {
  port: number;
  share: string;
  /** the shared folder on disk */
  dir: string;
  user: string;
  password: string;
  stop(): Promise<void>;
}

export async function startSamba(): Promise<Samba> {
  const root = tempFolder("samba");
  for (const d of ["private", "lock", "state", "cache", "pid", "share", "log", "ncalrpc"])
    mkdirSync(path.join(root, d), { recursive: true });
  const port = await freePort();
  const user = userInfo().username;
  const password = `pw-${Math.random().toString(36).slice(2, 10)}`;
  const conf = path.join(root, "smb.conf");
  const at = (d: string) => path.join(root, d);
  writeFileSync(
    conf,
    `[global]
  server role = standalone server
  smb ports = ${port}
  bind interfaces only = yes
  interfaces = 127.0.0.1
  private dir = ${at("private")}
  lock directory = ${at("lock")}
  state directory = ${at("state")}
  cache directory = ${at("cache")}
  pid directory = ${at("pid")}
  ncalrpc dir = ${at("ncalrpc")}
  passdb backend = tdbsam:${at("private")}/passdb.tdb
  log file = ${at("log")}/smbd.log
  map to guest = never
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
  server min protocol = SMB2
[fax]
  path = ${at("share")}
  read only = no
  force user = ${user}
`,
  );
  const added = spawnSync("pdbedit", ["-s", conf, "-a", "-u", user, "-t"], { input: `${password}\n${password}\n` });
  if (added.status !== 0) throw new Error(`pdbedit failed: ${added.stderr}`);
  // detached (its own session and group; smbd then must not make one): smbd signals its group as it
  // ends, which must not be the test runner's
  const smbd: ChildProcess = spawn("smbd", ["-F", "-s", conf, "--no-process-group", "--debug-stdout"], {
    stdio: "ignore",
    detached: true,
  });
  const auth = path.join(root, "probe-auth");
  writeFileSync(auth, `username = ${user}\npassword = ${password}\n`, { mode: 0o600 });
  await waitUntil(
    () => spawnSync("smbclient", ["//127.0.0.1/fax", "-p", String(port), "-A", auth, "-c", "ls"]).status === 0,
    "smbd to serve the share",
    20_000,
    200,
  );
  return {
    port,
    share: "//127.0.0.1/fax",
    dir: at("share"),
    user,
    password,
    async stop() {
      smbd.kill("SIGTERM");
      await new Promise((resolve) => (smbd.exitCode !== null ? resolve(null) : smbd.once("exit", resolve)));
      removeFolder(root);
    },
  };
}
