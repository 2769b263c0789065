// A private Dovecot IMAP server for the mailbox intake's tests: its own config, folders and port on
// 127.0.0.1, plain-text passwords from a passwd file, run as `nobody` when the tests run as root
// (Dovecot refuses to run its login processes as root). Debian: apt-get install dovecot-imapd.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { ImapFlow } from "imapflow";
import { freePort } from "./net.js";
import { waitUntil } from "./wait.js";
import { tempFolder } from "../tmp-dir.js";

const DOVECOT = "/usr/sbin/dovecot";

/** Why the Dovecot tests skip here, or null when they can run. */
export function dovecotMissing(): string | null {
  const r = spawnSync(DOVECOT, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? null : "Dovecot is not installed (Debian: apt-get install dovecot-imapd)";
}

export interface Dovecot {
  host: string;
  port: number;
  /** an IMAP client signed in as `user` (the caller logs it out) */
  client(user: string, password: string): Promise<ImapFlow>;
  /** an IMAP client signed in with an OAuth2 access token */
  tokenClient(token: string): Promise<ImapFlow>;
  /** puts a raw message into a user's folder, as a mail provider's delivery would (at arrivedAt) */
  deliver(user: string, password: string, raw: string, folder?: string, arrivedAt?: Date): Promise<void>;
  /** how many messages a folder of a user holds */
  count(user: string, password: string, folder: string): Promise<number>;
  /** SIGSTOP / SIGCONT every Dovecot process: the server hangs mid-conversation */
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
  /** the same server again, same port and mail */
  start(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * `tokens`: OAuth2 access tokens Dovecot takes (XOAUTH2, OAUTHBEARER) and the user each signs in,
 * checked through a token introspection endpoint this helper serves on loopback, as Microsoft 365
 * and Google check theirs.
 */
export async function startDovecot(
  users: Record<string, string>,
  tokens: Record<string, string> = {},
): Promise<Dovecot> {
  const root = process.getuid?.() === 0;
  const account = root
    ? { user: "nobody", group: "nogroup", uid: uidOf("nobody"), gid: gidOf("nogroup") }
    : { user: os.userInfo().username, group: groupName(), uid: os.userInfo().uid, gid: os.userInfo().gid };
  const dir = tempFolder("dovecot");
  mkdirSync(path.join(dir, "run"));
  mkdirSync(path.join(dir, "mail"));
  const port = await freePort();
  const introspection = http.createServer((req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const user = token !== undefined ? tokens[token] : undefined;
    res.writeHead(user ? 200 : 401, { "content-type": "application/json" });
    res.end(JSON.stringify(user ? { active: true, username: user } : { active: false }));
  });
  await new Promise<void>((resolve) => introspection.listen(0, "127.0.0.1", resolve));
  const introspectionPort = (introspection.address() as net.AddressInfo).port;
  writeFileSync(
    path.join(dir, "oauth2.conf.ext"),
    `introspection_mode = auth\nintrospection_url = http://127.0.0.1:${introspectionPort}/introspect\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n`,
  );
  writeFileSync(
    path.join(dir, "passwd"),
    Object.entries(users)
      .map(([u, p]) => `${u}:{PLAIN}${p}\n`)
      .join(""),
  );
  writeFileSync(
    path.join(dir, "dovecot.conf"),
    `base_dir = ${dir}/run
state_dir = ${dir}/run/state
log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login xoauth2 oauthbearer
default_internal_user = ${account.user}
default_internal_group = ${account.group}
default_login_user = ${account.user}
first_valid_uid = 0
mail_location = maildir:${dir}/mail/%u
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
passdb {
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = ${dir}/oauth2.conf.ext
}
userdb {
  driver = static
  args = uid=${account.uid} gid=${account.gid} home=${dir}/mail/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
  chroot =
}
service anvil {
  chroot =
}
protocol imap {
  mail_max_userip_connections = 100
}
`,
  );
  if (root) chownTree(dir, account.uid, account.gid);

  let child: ChildProcess | null = null;
  const launch = async (): Promise<void> => {
    const argv = root
      ? ["setpriv", "--reuid", account.user, "--regid", account.group, "--clear-groups", DOVECOT]
      : [DOVECOT];
    child = spawn(argv[0]!, [...argv.slice(1), "-F", "-c", path.join(dir, "dovecot.conf")], {
      detached: true,
      stdio: "ignore",
    });
    const exited = new Promise<never>((_, reject) =>
      child!.once("exit", (code) => reject(new Error(`dovecot exited with ${code}; see ${dir}/dovecot.log`))),
    );
    exited.catch(() => undefined);
    await Promise.race([greeting("127.0.0.1", port, 20_000), exited]);
  };
  const signal = (sig: NodeJS.Signals): void => {
    if (child?.pid) process.kill(-child.pid, sig);
  };
  const stop = async (): Promise<void> => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    process.kill(-c.pid!, "SIGCONT");
    process.kill(-c.pid!, "SIGTERM");
    await gone;
    // its imap processes end with the master; wait until the port is free again
    await waitClosed("127.0.0.1", port, 10_000);
  };
  await launch();

  const client = async (user: string, password: string): Promise<ImapFlow> => {
    const c = new ImapFlow({
      host: "127.0.0.1",
      port,
      secure: false,
      doSTARTTLS: false,
      auth: { user, pass: password },
      logger: false,
      disableAutoIdle: true,
    });
    await c.connect();
    return c;
  };
  return {
    host: "127.0.0.1",
    port,
    client,
    async tokenClient(token) {
      const c = new ImapFlow({
        host: "127.0.0.1",
        port,
        secure: false,
        doSTARTTLS: false,
        auth: { user: tokens[token] ?? "nobody", accessToken: token },
        logger: false,
        disableAutoIdle: true,
      });
      await c.connect();
      return c;
    },
    async deliver(user, password, raw, folder = "INBOX", arrivedAt) {
      const c = await client(user, password);
      try {
        await c.append(folder, raw, [], arrivedAt);
      } finally {
        await c.logout();
      }
    },
    async count(user, password, folder) {
      const c = await client(user, password);
      try {
        const st = await c.status(folder, { messages: true }).catch(() => null);
        return st ? (st.messages ?? 0) : 0;
      } finally {
        await c.logout();
      }
    },
    freeze: () => signal("SIGSTOP"),
    thaw: () => signal("SIGCONT"),
    stop,
    start: launch,
    async dispose() {
      await stop();
      await new Promise((resolve) => introspection.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once the server answers with its IMAP greeting (the port may not be bound yet). */
async function greeting(host: string, port: number, timeoutMs: number): Promise<void> {
  await waitUntil(
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(port, host);
        s.once("data", (d) => {
          s.destroy();
          resolve(d.toString().startsWith("* OK"));
        });
        s.once("error", () => resolve(false));
      }),
    `dovecot to answer on ${host}:${port}`,
    timeoutMs,
    50,
  );
}

/** Resolves once nothing listens on the port any more (or after `timeoutMs`: a stop is best effort). */
async function waitClosed(host: string, port: number, timeoutMs: number): Promise<void> {
  const closed = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(port, host);
      s.once("connect", () => {
        s.destroy();
        resolve(false);
      });
      s.once("error", () => resolve(true));
    });
  await waitUntil(closed, `${host}:${port} to close`, timeoutMs, 50).catch(() => undefined);
}

function uidOf(user: string): number {
  return Number(spawnSync("id", ["-u", user], { encoding: "utf8" }).stdout.trim());
}

function gidOf(group: string): number {
  return Number(spawnSync("getent", ["group", group], { encoding: "utf8" }).stdout.split(":")[2]);
}

function groupName(): string {
  return spawnSync("id", ["-gn"], { encoding: "utf8" }).stdout.trim();
}

function chownTree(dir: string, uid: number, gid: number): void {
  spawnSync("chown", ["-R", `${uid}:${gid}`, dir]);
  chownSync(dir, uid, gid);
}
