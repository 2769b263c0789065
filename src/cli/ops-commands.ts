// `config check`, `doctor`, `passwd`: the admin's checks before and after a deployment.
import { storeTimeCheck } from "../retention/service-time.js";
import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import net from "node:net";
import path from "node:path";
import nodemailer from "nodemailer";
import { stringify } from "yaml";
import { maskSecrets, outboxDir, unsetSecretName } from "../config/load.js";
import { durationsAsText } from "../config/duration.js";
import { describeOldKey } from "../config/old-keys.js";
import { configSchema } from "../config/schema.js";
import { maskUrl } from "../config/url-secrets.js";
import type { Config } from "../config/schema.js";
import type { FaxApi } from "../fax/types.js";
import { effectiveUsers } from "../keys/key-overrides.js";
import { DaemonLock } from "../store/daemon-lock.js";
import { describeError, FaxgateError } from "../errors.js";
import { hashPassword } from "../auth/password.js";
import { parseHostPort } from "../config/host-port.js";
import { riskySettings } from "../config/risky-settings.js";
import { spoolWriterNotes } from "../spool/watcher.js";
import { findKey } from "../keys/rotate.js";
import { createLedger } from "../parts/ledger.js";
import { officeOptions } from "../parts/converters.js";
import { mergePeople } from "../directory/merge.js";
import { storedPeople } from "../directory/stored-people.js";
import { unmappedPeople } from "./directory.js";
import { loadContext, whereToSetSecrets, withClients, withStore, type GlobalOptions } from "./context.js";
import {
  type Check,
  mailboxCheck,
  officeConversionCheck,
  postgresHint,
  senderDnsCheck,
  tlsCheck,
  webhooksUrlCheck,
} from "./doctor-checks.js";

export async function configCheckCommand(opts: GlobalOptions): Promise<void> {
  // Strict, as the daemon loads it: every unset secret is named at once and the check fails.
  const ctx = loadContext(opts, true);
  const masked = maskSecrets(ctx.config);
  for (const use of ctx.oldKeys) process.stderr.write(`warning: ${describeOldKey(use)}\n`);
  if (opts.json) process.stdout.write(`${JSON.stringify(masked, null, 2)}\n`);
  else {
    process.stderr.write(`${ctx.configFile ?? "(built-in sandbox config)"}: OK\n`);
    for (const risk of riskySettings(ctx.config)) process.stderr.write(`warning: ${risk}\n`);
    for (const note of await shadowedNotes(ctx)) process.stderr.write(`note: ${note}\n`);
    if (ctx.config.spool)
      for (const n of await spoolWriterNotes(ctx.config.spool.root, ctx.config.users))
        process.stderr.write(`${n.warn ? "warning" : "note"}: spool writers of ${n.user}: ${n.detail}\n`);
    // durations as they are written ("60s"), so the printed config reads back as the same
    process.stdout.write(stringify(durationsAsText(configSchema, masked)));
  }
}

/** The pid of the faxgate daemon holding this data folder's lock, or null when none runs. */
function runningDaemon(dataDir: string): number | null {
  if (!existsSync(path.join(dataDir, "daemon.lock"))) return null;
  try {
    DaemonLock.acquire(dataDir).release();
    return null;
  } catch (err) {
    if (!(err instanceof FaxgateError) || err.code !== "ALREADY_RUNNING") return null;
    const m = /\(pid (\d+)\)/.exec(err.message);
    return m ? Number(m[1]) : 0;
  }
}

function canBind(hostPort: string): Promise<NodeJS.ErrnoException | null> {
  const { host, port } = parseHostPort(hostPort, "listen");
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once("error", (err: NodeJS.ErrnoException) => resolve(err));
    s.listen(port, host, () => s.close(() => resolve(null)));
  });
}

async function portCheck(name: string, addr: string, daemonPid: number | null): Promise<Check> {
  const err = await canBind(addr);
  if (!err) return { name, ok: true, detail: "free" };
  if (err.code === "EADDRINUSE" && daemonPid !== null) {
    return { name, ok: true, detail: `in use by the running faxgate${daemonPid ? ` (pid ${daemonPid})` : ""}` };
  }
  if (err.code === "EADDRINUSE")
    return { name, ok: false, detail: "in use by another program (no faxgate daemon holds this data folder)" };
  if (err.code === "EACCES")
    return {
      name,
      ok: false,
      detail:
        "EACCES: a port below 1024 needs CAP_NET_BIND_SERVICE (the systemd unit grants it; as a plain user pick a port from 1024)",
    };
  return { name, ok: false, detail: err.code ?? err.message };
}

function folderCheck(name: string, dir: string): Check {
  try {
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o750 });
    if (!statSync(dir).isDirectory()) return { name, ok: false, detail: `${dir} is not a folder` };
    accessSync(dir, constants.W_OK | constants.R_OK);
    return { name, ok: true, detail: `${dir} writable` };
  } catch (err) {
    return { name, ok: false, detail: `${dir}: ${describeError(err)}` };
  }
}

/**
 * The queue the daemon will use: PostgreSQL reachable with this URL and user (a wrong password or
 * host is found here, not at the first mail), or the SQLite file readable. Opening it brings its
 * schema up to date, as `faxgate jobs` does; a SQLite queue not yet created is left to the daemon.
 */
async function queueCheck(c: Config): Promise<Check> {
  const { openStore, redactDatabaseUrl } = await import("../store/open.js");
  const where = c.database
    ? `PostgreSQL ${redactDatabaseUrl(c.database)}`
    : `SQLite ${path.join(c.data, "faxgate.db")}`;
  if (!c.database && !existsSync(path.join(c.data, "faxgate.db"))) {
    return { name: "queue", ok: true, detail: `${where} not created yet (the daemon creates it when it starts)` };
  }
  try {
    const store = await openStore({ dataDir: c.data, database: c.database });
    try {
      const counts = await store.counts();
      const total = Object.values(counts.jobs).reduce((a, b) => a + b, 0);
      const { queued, active, held } = counts.jobs;
      return {
        name: "queue",
        ok: true,
        detail: `${where}: ${total} jobs (${queued} queued, ${active} being sent, ${held} held)`,
      };
    } finally {
      await store.close();
    }
  } catch (err) {
    const why = describeError(err);
    const hint = c.database ? postgresHint(err) : "";
    return { name: "queue", ok: false, detail: `${where}: ${why}${hint ? `; ${hint}` : ""}` };
  }
}

/** The codes along an error's cause chain (undici hides the TLS code one or two levels down). */
function errorCodes(err: unknown): string[] {
  const out: string[] = [];
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 6;
    e = e.cause as typeof e, i++
  ) {
    if (typeof e.code === "string") out.push(e.code);
    if (e instanceof Error) {
      const m =
        /\b(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(?:_LOCALLY)?|CERT_HAS_EXPIRED|ERR_TLS_CERT_ALTNAME_INVALID)\b/.exec(
          e.message,
        );
      if (m) out.push(m[1]!);
    }
  }
  return out;
}

/** The error, plus what to do about it when the cause is one an admin meets on day one. */
function explainServiceError(err: unknown, c: Config): string {
  const codes = errorCodes(err);
  const base = describeError(err);
  if (codes.some((x) => /SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(x))) {
    return `${base} [${codes.filter((x) => /CERT|SIGN|VERIFY/.test(x)).join(", ")}]: the service's certificate is not signed by a trusted CA; ${c.api.caFile ? `api.caFile (${c.api.caFile}) is not the CA that signed it` : "set api.caFile to its CA certificate (PEM), e.g. the emulator's ca.pem"}`;
  }
  if (codes.includes("CERT_HAS_EXPIRED")) return `${base}: the service's certificate has expired`;
  if (codes.includes("ERR_TLS_CERT_ALTNAME_INVALID"))
    return `${base}: the certificate does not name the host of api.baseUrl`;
  if (err instanceof FaxgateError && err.code === "API_AUTH")
    return `${base} (the key is unknown to the service, or expired)`;
  return base;
}

/** The notification relay: connect and EHLO (and AUTH when the URL has credentials). */
async function relayCheck(transport: string): Promise<Check> {
  const shown = maskUrl(transport, "****");
  const t = nodemailer.createTransport({
    url: transport,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 15_000,
  } as never);
  try {
    await t.verify();
    return { name: "notify relay", ok: true, detail: `${shown} answers EHLO` };
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { response?: string };
    return {
      name: "notify relay",
      ok: false,
      detail: `${`${shown}: ${e.code ?? ""} ${e.response ?? e.message}`.replace(/\s+/g, " ").trim()} (outcome mails could not be sent)`,
    };
  } finally {
    t.close();
  }
}

/** The office converter: installed or not, and which protections its conversions run under. */
async function officeChecks(c: Config): Promise<Check[]> {
  if (c.office.soffice === false)
    return [{ name: "office converter", ok: true, detail: "turned off (office documents are refused)" }];
  const { OfficeConverter } = await import("../intake/office/office-convert.js");
  const office = new OfficeConverter(officeOptions(c.office));
  const soffice = office.available();
  if (!soffice)
    return [
      {
        name: "office converter",
        ok: true,
        warn: true,
        detail: `${c.office.soffice} not found (office documents are refused; install libreoffice-writer-nogui)`,
      },
    ];
  const p = await office.protections();
  const checks: Check[] = [{ name: "office converter", ok: true, detail: soffice }];
  for (const [what, detail] of Object.entries(p.summary)) checks.push({ name: `office ${what}`, ok: true, detail });
  for (const w of p.warnings) checks.push({ name: "office sandbox", ok: p.ok, warn: true, detail: w });
  if (p.ok) checks.push(await officeConversionCheck(c));
  return checks;
}

type CliContext = ReturnType<typeof loadContext>;

export async function doctorCommand(opts: GlobalOptions): Promise<number> {
  const ctx = loadContext(opts);
  const c = ctx.config;
  const checks: Check[] = [...setupChecks(ctx), ...(await localChecks(c))];
  await serviceChecks(ctx, checks);
  checks.push(...(await officeChecks(c)));
  const directory = await directoryKeysCheck(ctx);
  if (directory) checks.push(directory);
  for (const risk of riskySettings(c)) checks.push({ name: "risky setting", ok: true, warn: true, detail: risk });
  if (opts.json) process.stdout.write(`${JSON.stringify(checks, null, 2)}\n`);
  else
    for (const ch of checks)
      process.stdout.write(`${ch.ok ? (ch.warn ? "WARN" : "ok  ") : "FAIL"}  ${ch.name}: ${ch.detail}\n`);
  return checks.every((ch) => ch.ok) ? 0 : 1;
}

/** The config file, the secrets file and the secrets it leaves unset. */
function setupChecks(ctx: CliContext): Check[] {
  const checks: Check[] = [{ name: "config", ok: true, detail: ctx.configFile ?? "built-in sandbox config" }];
  if (ctx.secretsFile)
    checks.push({
      name: "secrets file",
      ok: !ctx.secretsProblem,
      detail: ctx.secretsProblem ?? `${ctx.secretsFile} readable`,
    });
  if (ctx.unset.length > 0) {
    checks.push({
      name: "secrets",
      ok: false,
      detail: `not set: ${ctx.unset.map((u) => `${u.name} (${u.key})`).join(", ")}; set them in ${whereToSetSecrets(ctx)}`,
    });
  }
  return checks;
}

/** This machine: folders, the queue, the mail relay, the ports to listen on, certificates, DNS, mailboxes. */
async function localChecks(c: Config): Promise<Check[]> {
  const checks: Check[] = [folderCheck("data folder", c.data), await queueCheck(c)];
  if (c.spool) checks.push(folderCheck("spool root", c.spool.root));
  if (c.spool)
    for (const n of await spoolWriterNotes(c.spool.root, c.users))
      checks.push({ name: `spool writers of ${n.user}`, ok: true, warn: n.warn, detail: n.detail });
  const outbox = outboxDir(c);
  if (outbox) checks.push(folderCheck("outbox", outbox));
  else if (c.notify) checks.push(await relayCheck(c.notify.transport));
  const daemonPid = runningDaemon(c.data);
  for (const addr of [
    ...(c.smtp?.listen ?? []),
    ...(c.admin ? [c.admin.listen] : []),
    ...(c.web ? [c.web.listen] : []),
    ...(c.webhooks ? [c.webhooks.listen] : []),
  ]) {
    checks.push(await portCheck(`listen ${addr}`, addr, daemonPid));
  }
  if (c.smtp?.tls) checks.push(tlsCheck("smtp.tls", c.smtp.tls));
  if (c.web?.tls) checks.push(tlsCheck("web.tls", c.web.tls));
  if (c.webhooks?.tls) checks.push(tlsCheck("webhooks.tls", c.webhooks.tls));
  if (c.webhooks) checks.push(await webhooksUrlCheck(c.webhooks, daemonPid !== null));
  if (c.smtp?.senderAuth.mode === "verify") checks.push(await senderDnsCheck(c));
  for (const m of c.imap?.mailboxes ?? []) checks.push(await mailboxCheck(m));
  return checks;
}

/** The fax service: the admin key, then each user's key (whose it is, the account's keeping time, its expiry). */
async function serviceChecks(ctx: CliContext, checks: Check[]): Promise<void> {
  const c = ctx.config;
  try {
    await withClients(ctx, async (api) => {
      // The admin key first, under its own name: its failure is not a user's.
      let admin: FaxApi | null = null;
      if (api.service.adminKey !== undefined) {
        try {
          const adminApi = api.admin("the admin key check");
          const me = await adminApi.me();
          await adminApi.listApiKeys(me.userId);
          admin = adminApi;
          checks.push({ name: "admin key (api.adminKey)", ok: true, detail: `works, admin level (${me.email})` });
        } catch (err) {
          const detail =
            err instanceof FaxgateError && err.code === "API_FORBIDDEN"
              ? "is a valid key but not of access level admin (keys list refused with 403)"
              : explainServiceError(err, c);
          checks.push({ name: "admin key (api.adminKey)", ok: false, detail });
          if (!(err instanceof FaxgateError) || !["API_AUTH", "API_FORBIDDEN", "USAGE"].includes(err.code)) return;
        }
      }
      await userKeyChecks(c, api, admin, checks);
    });
  } catch (err) {
    checks.push({ name: "fax service", ok: false, detail: explainServiceError(err, c) });
  }
}

/** Each user's key: works and is theirs; stops at the first failure that is not about one key. */
async function userKeyChecks(
  c: Config,
  api: Parameters<Parameters<typeof withClients>[1]>[0],
  admin: FaxApi | null,
  checks: Check[],
): Promise<void> {
  const rotated = new Set(
    effectiveUsers(c.users, c.data)
      .filter((u, i) => u.apiKey !== c.users[i]!.apiKey)
      .map((u) => u.name),
  );
  for (const u of effectiveUsers(c.users, c.data)) {
    const name = `api key of ${u.name}`;
    const from = rotated.has(u.name) ? " (the key the daemon rotated to, from keys.json)" : "";
    if (unsetSecretName(u.apiKey)) continue; // listed under "secrets"
    try {
      const me = await api.withKey(u.apiKey).me();
      const owner = keyOwnerProblem(u, me.email, c.users);
      checks.push(
        owner ?? {
          name,
          ok: true,
          detail: `works${from} (${me.email}, account timezone ${me.account?.timezone ?? "?"})`,
        },
      );
      // the account's own keeping time against the retention rule, once
      if (!checks.some((x) => x.name === "service retention"))
        checks.push(storeTimeCheck(me.account?.storeFaxesTime, c.retention));
      if (admin) {
        const key = await findKey(admin, me.userId, u.apiKey);
        if (key?.expiresAt) {
          const days = (Date.parse(key.expiresAt) - Date.now()) / 86_400_000;
          checks.push({
            name: `key expiry of ${u.name}`,
            ok: days > 0,
            warn: days < 14,
            detail: `expires ${key.expiresAt} (in ${Math.floor(days)} days)`,
          });
        }
      }
    } catch (err) {
      checks.push({ name, ok: false, detail: `${explainServiceError(err, c)}${from}` });
      if (!(err instanceof FaxgateError) || !["API_AUTH", "API_FORBIDDEN"].includes(err.code)) return;
    }
  }
}

/** People from the directory without a key of their own: each needs a service user id to fax. */
async function directoryKeysCheck(ctx: CliContext): Promise<Check | null> {
  const unmapped = await unmappedPeople(ctx).catch(() => null);
  if (!unmapped) return null;
  return {
    name: "directory keys",
    ok: true,
    warn: unmapped.people.length > 0,
    detail: unmapped.people.length
      ? `${unmapped.people.length} unmapped (no service user id, cannot fax: faxgate directory map <person> <serviceUserId>): ${unmapped.people.join(", ")}`
      : `every keyless person is mapped (${unmapped.mapped})`,
  };
}

/**
 * A key that works but is not the user's: the service answers whose key it is (GET /v1/me), and
 * every fax sent with it is that person's, received faxes included. Another configured user's
 * e-mail fails; an e-mail of no one here warns (the service may know the person by another one).
 */
function keyOwnerProblem(
  u: { name: string; email: string; aliases: string[] },
  ownerEmail: string,
  users: ReadonlyArray<{ name: string; email: string; aliases: string[] }>,
): { name: string; ok: boolean; warn?: boolean; detail: string } | null {
  const mine = (x: { email: string; aliases: string[] }) =>
    [x.email, ...x.aliases].some((a) => a.toLowerCase() === ownerEmail.toLowerCase());
  if (mine(u)) return null;
  const name = `api key of ${u.name}`;
  const other = users.find((x) => x.name !== u.name && mine(x));
  if (other)
    return {
      name,
      ok: false,
      detail: `works, but belongs to ${ownerEmail}, user "${other.name}"'s e-mail, not ${u.email}: every fax of "${u.name}" would be sent and charged as "${other.name}"'s, and faxes received for "${u.name}" would not arrive; give "${u.name}" their own key (faxgate keys create)`,
    };
  return {
    name,
    ok: true,
    warn: true,
    detail: `works, but belongs to ${ownerEmail}, not ${u.email} (users[].email of "${u.name}"): faxes of "${u.name}" are sent as ${ownerEmail}'s; check it is their key`,
  };
}

async function readPassword(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    // The first line only: `echo pw | faxgate passwd` or a here-doc must not hash the newline,
    // nor anything piped after it (a whole file would become one "password").
    let text = "";
    for await (const chunk of stdin) {
      text += chunk;
      if (text.includes("\n")) break;
    }
    const first = text.split(/\r?\n/)[0] ?? "";
    if (first === "") throw new FaxgateError("USAGE", "no password on stdin: its first line is empty");
    return first;
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let pw = "";
    const onData = (ch: string) => {
      for (const c of ch) {
        if (c === "\r" || c === "\n") {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off("data", onData);
          process.stderr.write("\n");
          resolve(pw);
          return;
        }
        if (c === "\u0003") {
          stdin.setRawMode(false);
          reject(new Error("cancelled"));
          return;
        }
        if (c === "\u007f") pw = pw.slice(0, -1);
        else pw += c;
      }
    };
    stdin.on("data", onData);
  });
}

/** At a terminal the password is asked twice (a typo would lock the user out); piped, one line. */
export async function passwdCommand(): Promise<void> {
  const pw = await readPassword("Password: ");
  if (pw.length < 8) throw new FaxgateError("USAGE", "the password must have at least 8 characters");
  if (process.stdin.isTTY && (await readPassword("Again: ")) !== pw)
    throw new FaxgateError("USAGE", "the two passwords differ; nothing was printed");
  process.stdout.write(`${await hashPassword(pw)}\n`);
}

/**
 * `faxgate reload`: SIGHUP to the daemon holding the data folder (its pid file). The daemon's own
 * row says what the reload did; this one says which account asked, through the cli door.
 */
export async function reloadCommand(opts: GlobalOptions): Promise<number> {
  const ctx = loadContext(opts);
  let pid = 0;
  try {
    pid = Number(readFileSync(path.join(ctx.config.data, "faxgate.pid"), "utf8").trim());
  } catch {
    // no pid file: no daemon
  }
  if (!(pid > 0) || !signalled(pid, 0)) {
    process.stderr.write(`no running faxgate daemon found for ${ctx.config.data} (no live pid in faxgate.pid)\n`);
    return 1;
  }
  await withStore(ctx, (store) =>
    createLedger(ctx.config, store).record({
      action: "config-reloaded",
      actor: { kind: "operator", id: os.userInfo().username },
      object: { kind: "config", id: "config" },
      door: "cli",
      detail: { asked: "SIGHUP" },
    }),
  );
  // the row first: the daemon's own row for this reload follows it in the chain
  if (!signalled(pid, "SIGHUP")) {
    process.stderr.write(`the daemon (pid ${pid}) ended before it could be told to reload\n`);
    return 1;
  }
  process.stdout.write(`told the running daemon (pid ${pid}) to reload\n`);
  return 0;
}

/** Signal 0 asks only whether the process lives (and is ours to signal). */
function signalled(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Directory people a users: entry wins over (docs/identity.md), from the lists the store holds. */
async function shadowedNotes(ctx: ReturnType<typeof loadContext>): Promise<string[]> {
  const d = ctx.config.directory;
  if (!d) return [];
  try {
    const people = await withStore(ctx, (store) => storedPeople(store, d));
    return mergePeople(ctx.config.users, people).shadowed.map(
      (s) =>
        `users[${s.by}] wins over the directory's ${s.person.name} (${s.person.source}: ${s.person.id}): same ${s.why}`,
    );
  } catch (err) {
    return [`the directory's stored people could not be read (${describeError(err)})`];
  }
}
