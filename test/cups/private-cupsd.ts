// A private cupsd for tests: its own config and folders in a temp folder, a Unix socket, and a
// TCP listener on a free port (loopback, and the host's first non-loopback IPv4 address when it
// has one, so that a job can arrive from "another host" as cupsd sees it). The faxgate backend
// is installed root-owned 0700 (cupsd then runs it as root, as in docs/print.md).
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { waitUntil } from "../helpers/wait.js";
import { tempFolder } from "../tmp-dir.js";

const here = path.dirname(fileURLToPath(import.meta.url));
export const BACKEND = path.resolve(here, "../../cups/faxgate");
export const PPD = path.resolve(here, "../../cups/faxgate.ppd");
export const POLICY = path.resolve(here, "../../cups/faxgate-policy.conf");

export function which(cmd: string): string | null {
  const r = spawnSync("sh", ["-c", `command -v ${cmd}`], {
    encoding: "utf8",
    env: { PATH: `${process.env.PATH}:/usr/sbin:/sbin` },
  });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** Why the CUPS tests cannot run here, or '' when they can. */
export function cupsSkipReason(extra: string[] = []): string {
  const missing = ["cupsd", "lpadmin", "lp", "lpstat", "useradd", "userdel", "chpasswd", ...extra].filter(
    (c) => !which(c),
  );
  if (missing.length) return `${missing.join(", ")} not installed (cups, cups-client, cups-bsd, passwd)`;
  return process.getuid?.() === 0 ? "" : "not running as root";
}

/** The host's first non-loopback IPv4 address: a connection from it is "remote" to cupsd. */
export function outsideAddress(): string | null {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return null;
}

async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A local account made for one test file (useradd) and removed after it, so that cupsd can
 * check who prints over its socket (peer credentials) or by password (PAM, Basic). */
export interface LocalAccount {
  name: string;
  group: string;
  password: string;
  remove(): void;
}

let accounts = 0;
export function throwawayAccount(tag: string): LocalAccount {
  // unique per process and call: test files run side by side
  const name = `fg${tag}${process.pid}${accounts++}`.slice(0, 31);
  const password = `pw-${name}-${Math.random().toString(36).slice(2)}`;
  execFileSync(which("useradd")!, ["-M", "-N", "-g", "nogroup", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", name]);
  execFileSync(which("chpasswd")!, [], { input: `${name}:${password}\n` });
  return {
    name,
    group: "nogroup",
    password,
    remove: () => void spawnSync(which("userdel")!, [name]),
  };
}

export interface PrivateCupsd {
  dir: string;
  env: NodeJS.ProcessEnv;
  port: number;
  /** The non-loopback address cupsd also listens on, or null. */
  outside: string | null;
  run(cmd: string, args: string[]): string;
  /** lp as a local account (root when absent), never waiting for a password prompt. */
  lpAs(account: { name: string; group: string } | undefined, args: string[]): { status: number | null; out: string };
  errorLog(): string;
  stop(): Promise<void>;
}

export async function startPrivateCupsd(opts: { policy?: boolean } = {}): Promise<PrivateCupsd> {
  const t = tempFolder("cups");
  chmodSync(t, 0o755);
  for (const d of ["etc/ppd", "etc/ssl", "spool/tmp", "cache", "run", "log", "lib/backend"])
    mkdirSync(path.join(t, d), { recursive: true });
  for (const d of ["cgi-bin", "daemon", "filter", "monitor", "notifier"]) {
    if (existsSync(`/usr/lib/cups/${d}`)) symlinkSync(`/usr/lib/cups/${d}`, path.join(t, "lib", d));
  }
  copyFileSync(BACKEND, path.join(t, "lib/backend/faxgate"));
  chmodSync(path.join(t, "lib/backend/faxgate"), 0o700);
  const sock = path.join(t, "cups.sock");
  const port = await freePort("127.0.0.1");
  const outside = outsideAddress();
  writeFileSync(
    path.join(t, "etc/cups-files.conf"),
    [
      `ServerRoot ${t}/etc`,
      `RequestRoot ${t}/spool`,
      `TempDir ${t}/spool/tmp`,
      `CacheDir ${t}/cache`,
      `StateDir ${t}/run`,
      `ServerBin ${t}/lib`,
      "DataDir /usr/share/cups",
      `AccessLog ${t}/log/access_log`,
      `ErrorLog ${t}/log/error_log`,
      `PageLog ${t}/log/page_log`,
      `Printcap ${t}/run/printcap`,
      `ServerKeychain ${t}/etc/ssl`,
      "FileDevice No",
      "Sandboxing Relaxed",
      "",
    ].join("\n"),
  );
  writeFileSync(
    path.join(t, "etc/cupsd.conf"),
    [
      "LogLevel info",
      `Listen ${sock}`,
      `Listen 127.0.0.1:${port}`,
      ...(outside ? [`Listen ${outside}:${port}`] : []),
      "Browsing Off",
      "WebInterface No",
      "DefaultAuthType Basic",
      "ServerAlias *",
      "<Location />",
      "  Order allow,deny",
      "  Allow all",
      "</Location>",
      // Debian's stock default policy (cups 2.4, /etc/cups/cupsd.conf): printing needs no
      // authentication, and @OWNER is whoever the client said it was
      "<Policy default>",
      "  JobPrivateAccess default",
      "  JobPrivateValues default",
      "  SubscriptionPrivateAccess default",
      "  SubscriptionPrivateValues default",
      "  <Limit Create-Job Print-Job Print-URI Validate-Job>",
      "    Order deny,allow",
      "  </Limit>",
      "  <Limit Send-Document Send-URI Hold-Job Release-Job Restart-Job Purge-Jobs Set-Job-Attributes Create-Job-Subscription Renew-Subscription Cancel-Subscription Get-Notifications Reprocess-Job Cancel-Current-Job Suspend-Current-Job Resume-Job Cancel-My-Jobs Close-Job CUPS-Move-Job>",
      "    Require user @OWNER @SYSTEM",
      "    Order deny,allow",
      "  </Limit>",
      "  <Limit CUPS-Get-Document>",
      "    AuthType Default",
      "    Require user @OWNER @SYSTEM",
      "    Order deny,allow",
      "  </Limit>",
      "  <Limit CUPS-Add-Modify-Printer CUPS-Delete-Printer CUPS-Add-Modify-Class CUPS-Delete-Class CUPS-Set-Default CUPS-Get-Devices Pause-Printer Resume-Printer Enable-Printer Disable-Printer Pause-Printer-After-Current-Job Hold-New-Jobs Release-Held-New-Jobs Deactivate-Printer Activate-Printer Restart-Printer Shutdown-Printer Startup-Printer Promote-Job Schedule-Job-After Cancel-Jobs CUPS-Accept-Jobs CUPS-Reject-Jobs>",
      "    AuthType Default",
      "    Require user @SYSTEM",
      "    Order deny,allow",
      "  </Limit>",
      "  <Limit Cancel-Job CUPS-Authenticate-Job>",
      "    Require user @OWNER @SYSTEM",
      "    Order deny,allow",
      "  </Limit>",
      "  <Limit All>",
      "    Order deny,allow",
      "  </Limit>",
      "</Policy>",
      // the policy faxgate ships, as an administrator pastes it into cupsd.conf
      ...(opts.policy ? [readFileSync(POLICY, "utf8")] : []),
      "",
    ].join("\n"),
  );
  const cupsd: ChildProcess = spawn(
    which("cupsd")!,
    ["-f", "-c", `${t}/etc/cupsd.conf`, "-s", `${t}/etc/cups-files.conf`],
    { stdio: "ignore" },
  );
  const env = { ...process.env, CUPS_SERVER: sock };
  await waitUntil(() => existsSync(sock), "cupsd socket", 10_000);
  return {
    dir: t,
    env,
    port,
    outside,
    run: (cmd, args) => execFileSync(which(cmd)!, args, { env, encoding: "utf8" }),
    lpAs(account, args) {
      const argv = account
        ? ["setpriv", `--reuid=${account.name}`, `--regid=${account.group}`, "--clear-groups", which("lp")!, ...args]
        : [which("lp")!, ...args];
      const r = spawnSync(argv[0]!, argv.slice(1), {
        env,
        encoding: "utf8",
        timeout: 20_000,
        stdio: ["ignore", "pipe", "pipe"],
      });
      return { status: r.status, out: `${r.stdout}${r.stderr}` };
    },
    errorLog: () =>
      existsSync(path.join(t, "log/error_log")) ? readFileSync(path.join(t, "log/error_log"), "utf8") : "",
    async stop() {
      // cupsd writes its cache as it shuts down: wait for it to exit before removing its folders
      if (cupsd.exitCode === null && cupsd.signalCode === null) {
        const exited = new Promise((resolve) => cupsd.once("exit", resolve));
        cupsd.kill("SIGTERM");
        // a bound, not a sleep: the exit event ends it; a cupsd still there after 10 s is killed
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (cupsd.exitCode === null && cupsd.signalCode === null) cupsd.kill("SIGKILL");
      }
      rmSync(t, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    },
  };
}
