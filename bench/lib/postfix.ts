// Postfix as the bench's peer, and its smtp-sink as the ceiling, each run privately for one
// measurement and removed afterwards.
// - startPostfix: a private Postfix instance (its own main.cf/master.cf, queue and data folders in
//   a temp folder; `postfix -c DIR start`) that accepts mail for one domain on 127.0.0.1:PORT and
//   delivers it to discard(8). So what is measured is Postfix's durable accept: smtpd -> cleanup
//   writes the queue file and fsyncs it before the 250, as faxgate writes its job before its 250.
//   Needs root (master(8) starts as root and drops to mail_owner), as any Postfix does.
// - startSmtpSink: smtp-sink(1), which answers 250 to everything and keeps nothing.
// - runSmtpSource: smtp-source(1), Postfix's own load generator, timed.
// Nothing here is left running: stop() waits for the processes to be gone, and an exit handler
// aborts an instance the bench could not stop itself (an exception, Ctrl-C).
import { execFile, execFileSync, spawn } from "node:child_process";
import {
  accessSync,
  chmodSync,
  chownSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { freePort } from "../../test/helpers/net.js";

const run = promisify(execFile);
const SEARCH = [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/usr/lib/postfix/sbin"];

export const INSTALL_HINT =
  "Postfix is not installed: on Debian/Ubuntu `echo 'postfix postfix/main_mailer_type select No configuration' | debconf-set-selections && apt-get install -y postfix` (it need not run: the bench starts a private instance and stops it again)";

function which(name: string): string | null {
  for (const dir of SEARCH) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

export interface PostfixTools {
  postfix: string | null;
  smtpSink: string | null;
  smtpSource: string | null;
  /** why the Postfix peer cannot be run here, or null */
  postfixUnavailable: string | null;
}

/** FAXGATE_BENCH_NO_POSTFIX=1 runs the bench as if Postfix were not installed (to see the fallback). */
export function postfixTools(): PostfixTools {
  if (process.env.FAXGATE_BENCH_NO_POSTFIX === "1")
    return { postfix: null, smtpSink: null, smtpSource: null, postfixUnavailable: INSTALL_HINT };
  const postfix = which("postfix");
  const unavailable = !postfix
    ? INSTALL_HINT
    : process.getuid?.() !== 0
      ? "a private Postfix instance needs root (its master starts as root); run the bench as root for the Postfix peer"
      : null;
  return { postfix, smtpSink: which("smtp-sink"), smtpSource: which("smtp-source"), postfixUnavailable: unavailable };
}

export { freePort };

async function waitForPort(port: number, ms: number, why: () => string): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms: ${why()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Alive and not a zombie (a stopped master may linger as one until init reaps it). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

export interface Running {
  port: number;
  /** one line for the bench's report: what ran and how */
  label: string;
  stop(): Promise<void>;
  /** the server's top process (Postfix's master), for its CPU from /proc */
  pid?: () => number | null;
}

const mainCf = (dir: string, domain: string) => `# private bench instance (bench/lib/postfix.ts); removed after the run
compatibility_level = 3.6
queue_directory = ${dir}/spool
data_directory = ${dir}/lib
mail_owner = postfix
setgid_group = postdrop
myhostname = bench.invalid
mydomain = bench.invalid
myorigin = bench.invalid
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
# accept any local part of the one domain, and deliver everything to discard(8)
mydestination = ${domain}
local_recipient_maps =
local_transport = discard:
default_transport = discard:
relay_transport = discard:
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
alias_maps =
alias_database =
biff = no
smtputf8_enable = no
maillog_file_prefixes = ${dir}
maillog_file = ${dir}/maillog
# No back-pressure pause: with the default (1s) each smtpd sleeps up to a second before taking the
# next message whenever the queue manager lags, and the bench would measure that pause (a Postfix
# p99 near 1,000 ms), not what Postfix can accept (issue 54)
in_flow_delay = 0
`;

// The stock services minus the ones a discard-only instance never uses; nothing chrooted, so the
// instance needs no copies of /etc in its queue folder.
const masterCf = (port: number) => `127.0.0.1:${port} inet n - n - - smtpd
pickup     unix  n - n 60 1 pickup
cleanup    unix  n - n -  0 cleanup
qmgr       unix  n - n 300 1 qmgr
rewrite    unix  - - n -  - trivial-rewrite
bounce     unix  - - n -  0 bounce
defer      unix  - - n -  0 bounce
trace      unix  - - n -  0 bounce
verify     unix  - - n -  1 verify
flush      unix  n - n 1000? 0 flush
proxymap   unix  - - n -  - proxymap
proxywrite unix  - - n -  1 proxymap
showq      unix  n - n -  - showq
error      unix  - - n -  - error
retry      unix  - - n -  - error
discard    unix  - - n -  - discard
anvil      unix  - - n -  1 anvil
scache     unix  - - n -  1 scache
postlog    unix-dgram n - n - 1 postlogd
`;

async function uidOf(user: string): Promise<number> {
  const { stdout } = await run("id", ["-u", user]);
  return Number(stdout.trim());
}

/** A private Postfix on 127.0.0.1:<free port> accepting mail for `domain` into discard(8). */
export async function startPostfix(tools: PostfixTools, domain: string): Promise<Running> {
  if (tools.postfixUnavailable || !tools.postfix) throw new Error(tools.postfixUnavailable ?? INSTALL_HINT);
  const postfix = tools.postfix;
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-postfix-"));
  // mail_owner must be able to reach the queue and data folders
  chmodSync(dir, 0o755);
  const etc = path.join(dir, "etc");
  for (const d of ["etc", "spool", "lib"]) mkdirSync(path.join(dir, d));
  chownSync(path.join(dir, "lib"), await uidOf("postfix"), -1);
  writeFileSync(path.join(etc, "main.cf"), mainCf(dir, domain));
  writeFileSync(path.join(etc, "master.cf"), masterCf(port));
  const log = () => {
    try {
      return readFileSync(path.join(dir, "maillog"), "utf8").split("\n").slice(-8).join("\n");
    } catch {
      return "(no maillog)";
    }
  };
  let stopped = false;
  const masterPid = (): number | null => {
    try {
      return Number(readFileSync(path.join(dir, "spool", "pid", "master.pid"), "utf8").trim()) || null;
    } catch {
      return null;
    }
  };
  // Last resort if the bench dies between start and stop: never leave a Postfix behind.
  const onExit = (): void => {
    if (stopped) return;
    try {
      execFileSync(postfix, ["-c", etc, "abort"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (): void => process.exit(130);
  process.once("exit", onExit);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const stop = async (): Promise<void> => {
    if (stopped) return;
    const pid = masterPid();
    await run(postfix, ["-c", etc, "stop"]).catch(() => undefined);
    const end = Date.now() + 15_000;
    while (pid !== null && alive(pid) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    if (pid !== null && alive(pid)) {
      await run(postfix, ["-c", etc, "abort"]).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 500));
      if (alive(pid)) process.kill(pid, "SIGKILL");
    }
    stopped = true;
    process.off("exit", onExit);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await run(postfix, ["-c", etc, "start"]).catch((err: Error & { stderr?: string }) => {
      throw new Error(`postfix start failed: ${err.stderr ?? err.message}\n${log()}`);
    });
    await waitForPort(port, 15_000, log);
  } catch (err) {
    await stop();
    throw err;
  }
  const version = await run(postfix.replace(/postfix$/, "postconf"), ["-h", "-d", "mail_version"]).then(
    (r) => r.stdout.trim(),
    () => "?",
  );
  return { port, label: `Postfix ${version} (private, discard)`, stop, pid: masterPid };
}

/** smtp-sink on 127.0.0.1:<free port>: answers every command at once and keeps nothing. */
export async function startSmtpSink(tools: PostfixTools): Promise<Running> {
  if (!tools.smtpSink) throw new Error(INSTALL_HINT);
  const port = await freePort();
  // as root smtp-sink wants a user to drop to
  const user =
    process.getuid?.() === 0
      ? [
          "-u",
          await uidOf("postfix").then(
            () => "postfix",
            () => "nobody",
          ),
        ]
      : [];
  const child = spawn(tools.smtpSink, [...user, `127.0.0.1:${port}`, "256"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += d));
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const onExit = (): void => void child.kill("SIGKILL");
  process.once("exit", onExit);
  const stop = async (): Promise<void> => {
    process.off("exit", onExit);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await gone;
  };
  try {
    await waitForPort(port, 10_000, () => stderr);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, label: "smtp-sink (no work at all)", stop };
}

/**
 * smtp-source against a port: `sessions` parallel sessions, `messages` in all (a connection per
 * message, smtp-source's default), each `bytes` of filler or, with `file`, that prepared message
 * (`-F`: its lines are sent with CRLF and dot-stuffed). A warm-up of one message per session
 * first (every smtpd process started). Returns msg/s; throws if smtp-source reports any failure.
 */
export async function runSmtpSource(
  tools: PostfixTools,
  o: { port: number; sessions: number; messages: number; bytes?: number; file?: string; from: string; to: string },
): Promise<number> {
  if (!tools.smtpSource) throw new Error(INSTALL_HINT);
  const body = o.file ? ["-F", o.file] : ["-l", String(o.bytes ?? 100_000)];
  const args = (m: number) => [
    "-s",
    String(o.sessions),
    "-m",
    String(m),
    ...body,
    "-f",
    o.from,
    "-t",
    o.to,
    `127.0.0.1:${o.port}`,
  ];
  await run(tools.smtpSource, args(o.sessions));
  const t0 = performance.now();
  await run(tools.smtpSource, args(o.messages), { timeout: 300_000 });
  return o.messages / ((performance.now() - t0) / 1000);
}
