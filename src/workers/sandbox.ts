// Where a sandboxed child (LibreOffice, ocrmypdf, pdftoppm) runs: a converter that follows a link
// the stripper missed (a binary .doc, a future format) must still find neither the network nor the
// gateway's files. In order of
// preference: bubblewrap with no network and only the system folders, the profile and the job's
// own folder mounted (the data folder and the spool do not exist in there); else `unshare -n`
// (no network, files as the converter's user sees them); else nothing, said loudly. When the
// daemon runs as root the converter also runs as an unprivileged user of its own.
import { spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import os from "node:os";
import path from "node:path";
import { findExecutable } from "../fs/index.js";

export type SandboxMode = "auto" | "required" | "off";

export interface SandboxPlan {
  /** How the converter is isolated: 'bwrap' (network and files), 'unshare' (network), 'none'. */
  method: "bwrap" | "unshare" | "none";
  /** The user the converter runs as, when it is not the daemon's own. */
  runAs: { name: string; uid: number; gid: number } | null;
  /** One line per protection, for the start-up log and `faxgate doctor`. */
  summary: { profile: string; strip: string; user: string; network: string; files: string };
  /** What is missing and why (empty when everything is in force). */
  warnings: string[];
}

/** System folders the children need, read-only; /etc only in the parts they read (not the gateway's config). */
const SYSTEM_BINDS = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib64",
  "/lib32",
  "/libx32",
  "/opt/libreoffice",
  "/etc/fonts",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/libreoffice",
  "/etc/alternatives",
  "/etc/localtime",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/var/cache/fontconfig",
  "/usr/share/fonts",
];

/** The arguments that put `command` into the sandbox (none: run it as it is). */
export function sandboxArgs(plan: SandboxPlan, o: { rw: string[]; command: string }): string[] {
  if (plan.method === "none") return [];
  if (plan.method === "unshare") {
    return [
      "unshare",
      "--net",
      ...(plan.runAs ? ["--setgid", String(plan.runAs.gid), "--setuid", String(plan.runAs.uid)] : []),
      "--",
    ];
  }
  const binds: string[] = [];
  const seen = new Set<string>();
  const install = installDir(o.command);
  for (const p of [...SYSTEM_BINDS, ...(install ? [install] : [])]) {
    if (seen.has(p) || !existsSync(p)) continue;
    seen.add(p);
    binds.push("--ro-bind", p, p);
  }
  return [
    "bwrap",
    "--unshare-all",
    "--die-with-parent",
    "--cap-drop",
    "ALL",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    ...binds,
    ...o.rw.flatMap((p) => ["--bind", p, p]),
    "--chdir",
    o.rw[o.rw.length - 1]!,
    "--",
  ];
}

/** The folder a command is installed in when it lies outside the system folders (/opt/libreoffice7.6). */
function installDir(command: string): string | null {
  try {
    const real = realpathSync(command);
    const top = real.split("/").slice(0, 3).join("/");
    return SYSTEM_BINDS.some((b) => real.startsWith(`${b}/`)) ? null : top;
  } catch {
    return null;
  }
}

/** Looks up a user in /etc/passwd (no NSS: the lookup must not block or reach a directory server). */
function passwdEntry(name: string): { name: string; uid: number; gid: number } | null {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const f = line.split(":");
      if (f[0] === name || (/^\d+$/.test(name) && f[2] === name))
        return { name: f[0]!, uid: Number(f[2]), gid: Number(f[3]) };
    }
  } catch {
    // no passwd file
  }
  return /^\d+$/.test(name) ? { name, uid: Number(name), gid: Number(name) } : null;
}

/** The user a root daemon runs the converter as: the configured one, faxgate-convert, or nobody. */
function converterUser(configured: string | undefined, warnings: string[]): SandboxPlan["runAs"] {
  if (configured) {
    const u = passwdEntry(configured);
    if (!u) throw new Error(`office.user: there is no user ${configured}`);
    if (u.uid === 0) throw new Error("office.user: the converter must not run as root");
    return u;
  }
  const own = passwdEntry("faxgate-convert");
  if (own) return own;
  warnings.push(
    'the converter runs as "nobody" (create a user faxgate-convert, or set office.user, to give it one of its own)',
  );
  return passwdEntry("nobody") ?? { name: "nobody", uid: 65534, gid: 65534 };
}

/** Runs a probe command; true when it exits 0 within the time. */
function probe(cmd: string[], runAs: SandboxPlan["runAs"], cwd: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(cmd[0]!, cmd.slice(1), {
      cwd,
      stdio: "ignore",
      ...(runAs && cmd[0] !== "unshare" ? { uid: runAs.uid, gid: runAs.gid } : {}),
    });
    const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.on("error", () => {
      clearTimeout(t);
      resolve(false);
    });
    child.on("close", (code) => {
      clearTimeout(t);
      resolve(code === 0);
    });
  });
}

/**
 * Finds out which protections this machine allows, by trying them: a sandbox that is configured
 * but does not work (no user namespaces in a container, a systemd unit that forbids them) is
 * reported, not assumed.
 */
export async function planSandbox(o: {
  mode: SandboxMode;
  user?: string;
  /** The command that will run in it (its install folder is mounted when outside the system's). */
  command: string | null;
}): Promise<SandboxPlan> {
  const warnings: string[] = [];
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const runAs = isRoot && o.mode !== "off" ? converterUser(o.user, warnings) : null;
  if (!isRoot && o.user)
    warnings.push(`office.user ${o.user} is ignored: the daemon is not root and cannot switch users`);
  let method: SandboxPlan["method"] = "none";
  if (o.mode !== "off") {
    const tmp = mkdtempSync(path.join(os.tmpdir(), "faxgate-sandbox-probe-"));
    if (runAs) {
      // as the converter's folders will be: reachable by its user only
      chmodSync(tmp, 0o711);
      chownSync(tmp, runAs.uid, runAs.gid);
    }
    try {
      const plan: SandboxPlan = { method: "bwrap", runAs, summary: emptySummary(), warnings: [] };
      const tru = findExecutable("true") ?? "/bin/true";
      if (
        findExecutable("bwrap") &&
        (await probe([...sandboxArgs(plan, { rw: [tmp], command: o.command ?? tru }), tru], runAs, tmp))
      )
        method = "bwrap";
      else if (
        findExecutable("unshare") &&
        (isRoot || !runAs) &&
        (await probe([...sandboxArgs({ ...plan, method: "unshare" }, { rw: [tmp], command: tru }), tru], runAs, tmp))
      )
        method = "unshare";
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    if (method !== "bwrap") {
      warnings.push(
        findExecutable("bwrap")
          ? "bubblewrap (bwrap) cannot create its namespaces here (user namespaces are off, or the service manager or container forbids them): the converter can read every file its user can"
          : "bubblewrap (bwrap) is not installed (apt-get install bubblewrap): the converter can read every file its user can",
      );
    }
    if (method === "none") warnings.push("no network namespace could be made: the converter can reach the network");
  } else {
    warnings.push("office.sandbox is off: the converter runs with the daemon's user, files and network");
  }
  const summary = {
    profile: "hardened (no macros, links never updated, untrusted linked content blocked)",
    strip:
      "external references removed from OOXML, ODF, flat XML and RTF before conversion (binary .doc/.xls/.ppt rely on the profile and sandbox)",
    user: runAs ? `${runAs.name} (uid ${runAs.uid})` : isRoot ? "root, as the daemon" : "the daemon's own user",
    network: method === "none" ? "open" : `none (${method === "bwrap" ? "bubblewrap" : "unshare"})`,
    files:
      method === "bwrap"
        ? "only the system folders and the job's own folder (bubblewrap)"
        : "everything its user can read",
  };
  return { method, runAs, summary, warnings };
}

function emptySummary(): SandboxPlan["summary"] {
  return { profile: "", strip: "", user: "", network: "", files: "" };
}

/**
 * Why a converter of its own user cannot reach `dir` (a folder above it not searchable by others),
 * or null. Said at the first conversion instead of LibreOffice's own "can't cd".
 */
export function unreachableBy(dir: string, runAs: NonNullable<SandboxPlan["runAs"]>): string | null {
  for (let d = path.dirname(path.resolve(dir)); ; d = path.dirname(d)) {
    const st = statSync(d);
    const ok =
      st.uid === runAs.uid
        ? (st.mode & 0o100) !== 0
        : st.gid === runAs.gid
          ? (st.mode & 0o010) !== 0
          : (st.mode & 0o001) !== 0;
    if (!ok)
      return `the converter's folder ${dir} cannot be reached by user ${runAs.name}: ${d} is not searchable by it (chmod o+x, or use another folder)`;
    if (d === path.dirname(d)) return null;
  }
}

/** Kills a process group started detached (a converter and everything it started). */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * Resolves once no live process is left in process group `pgid`, true; false past `timeoutMs`. A
 * killed process that waits for the disk (a LibreOffice reading its install while it starts) dies
 * only when that read returns, which on a busy machine can be well after the group's leader was
 * seen to end. Zombies do not count: an orphan may never be collected (node as a container's pid 1).
 */
export async function groupGone(pgid: number, timeoutMs = GROUP_GONE_MS): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (groupAlive(pgid)) {
    if (Date.now() >= until) return false;
    await sleep(20);
  }
  return true;
}

/** Longest a stopped converter's processes are waited for. */
const GROUP_GONE_MS = 10_000;

/** A process of group `pgid` that is not a zombie, from /proc (none where there is no /proc). */
function groupAlive(pgid: number): boolean {
  // no member at all, zombies included (the usual answer): known without reading all of /proc
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((n) => /^\d+$/.test(n));
  } catch {
    return false;
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp ...": the command name may hold spaces and parentheses
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(f[2]) === pgid && f[0] !== "Z") return true;
  }
  return false;
}
