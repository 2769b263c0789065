// `faxgate doctor`'s checks of what the config turns on beyond the queue and the keys: a real
// office conversion, the webhook receiver's port and public URL, certificates and their keys,
// each IMAP mailbox's sign-in and folder, the resolvers the MX mode's sender checks ask, and
// what to do about a PostgreSQL that does not let us in. Each failure says what to do.
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { type Config, type MailboxConfig, smtpSettings } from "../config/schema.js";
import { maskUrl } from "../config/url-secrets.js";
import { describeError } from "../errors.js";
import { officeOptions } from "../parts/converters.js";

export type Check = { name: string; ok: boolean; detail: string; warn?: boolean };

const DAY = 86_400_000;

/**
 * A certificate and its key (smtp.tls, web.tls, webhooks.tls): both readable as the daemon reads
 * them, the key the certificate's own, and the certificate not expired (a warning two weeks before).
 */
export function tlsCheck(name: string, tls: { cert: string; key: string }, now = Date.now()): Check {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(tls.cert));
  } catch (err) {
    return {
      name,
      ok: false,
      detail: `${tls.cert}: ${certProblem(err)}; give ${name}.cert a PEM certificate file the faxgate user can read`,
    };
  }
  try {
    const key = createPrivateKey(readFileSync(tls.key));
    if (!cert.checkPrivateKey(key))
      return {
        name,
        ok: false,
        detail: `${tls.key} is not the key of ${tls.cert}; give ${name}.key the private key the certificate was made for`,
      };
  } catch (err) {
    return {
      name,
      ok: false,
      detail: `${tls.key}: ${certProblem(err)}; give ${name}.key a PEM private key file the faxgate user can read`,
    };
  }
  const until = Date.parse(cert.validTo);
  const days = Math.floor((until - now) / DAY);
  const subject = cert.subject.replace(/\n/g, ", ");
  if (until <= now)
    return {
      name,
      ok: false,
      detail: `${tls.cert} (${subject}) expired on ${new Date(until).toISOString().slice(0, 10)}; renew it and reload faxgate`,
    };
  return {
    name,
    ok: true,
    warn: days < 14,
    detail: `${tls.cert} (${subject}) matches its key, valid until ${new Date(until).toISOString().slice(0, 10)} (${days} days)${days < 14 ? "; renew it soon" : ""}`,
  };
}

function certProblem(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === "ENOENT") return "missing";
  if (e.code === "EACCES") return "not readable by this user";
  return `not readable as PEM (${describeError(err)})`;
}

/**
 * The webhook receiver's public URL: https beyond loopback, and, while the daemon runs, a POST to it
 * without credentials must come back as our receiver's 401: that proves the URL (DNS, TLS, proxy,
 * path) reaches the receiver, which is what the service will need.
 */
export async function webhooksUrlCheck(c: NonNullable<Config["webhooks"]>, daemonRunning: boolean): Promise<Check> {
  const name = "webhooks url";
  const url = new URL(c.url);
  // the URL as shown: a user and password in it are the service's credentials
  const shown = maskUrl(c.url);
  const loopback = /^(localhost|127\.[\d.]+|\[::1\])$/.test(url.hostname);
  if (url.protocol === "http:" && !loopback)
    return {
      name,
      ok: true,
      warn: true,
      detail: `${shown} is plain http beyond loopback: the service's credentials travel in clear; use https (a TLS proxy or webhooks.tls)`,
    };
  if (!daemonRunning)
    return {
      name,
      ok: true,
      warn: true,
      detail: `${shown} not tried: faxgate is not running; start it and run doctor again to check that the URL reaches the receiver`,
    };
  try {
    const res = await fetch(c.url, { method: "POST", signal: AbortSignal.timeout(10_000), redirect: "manual" });
    await res.body?.cancel();
    if (res.status === 401 && /faxgate webhooks/.test(res.headers.get("www-authenticate") ?? ""))
      return { name, ok: true, detail: `${shown} reaches the receiver (it asks for the credentials)` };
    return {
      name,
      ok: false,
      detail: `${shown} answered ${res.status}, not the receiver's 401: the proxy in front must forward POST ${url.pathname} to ${c.listen}`,
    };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return {
      name,
      ok: false,
      detail: `${shown} cannot be reached from here (${cause?.code ?? cause?.message ?? describeError(err)}): check its DNS name, port and certificate, and that the proxy forwards it to ${c.listen}`,
    };
  }
}

/** A one-page document, as small as RTF allows, for the conversion check. */
const ONE_PAGE_RTF = "{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}\\f0\\fs24 faxgate doctor: a test page.\\par}";

/**
 * LibreOffice converting a one-page document, with the office settings (sandbox, limits, user) the
 * daemon uses: what an office attachment will meet.
 */
export async function officeConversionCheck(c: Config): Promise<Check> {
  const name = "office conversion";
  const { OfficeConverter } = await import("../intake/office/office-convert.js");
  const office = new OfficeConverter(officeOptions(c.office));
  const started = Date.now();
  try {
    const pdf = await office.convert({ name: "doctor-test.rtf", ext: ".rtf", data: Buffer.from(ONE_PAGE_RTF) });
    const { PDFDocument } = await import("@cantoo/pdf-lib");
    const pages = (await PDFDocument.load(pdf)).getPageCount();
    if (pages !== 1) return { name, ok: false, detail: `a one-page document came out as ${pages} pages` };
    return { name, ok: true, detail: `a one-page document converted to PDF in ${Date.now() - started} ms` };
  } catch (err) {
    return {
      name,
      ok: false,
      detail: `a one-page document could not be converted: ${describeError(err)}; office documents would be refused. Try office.sandbox: auto, or a longer office.timeoutMs, or reinstall libreoffice-writer-nogui`,
    };
  } finally {
    await office.close();
  }
}

/** The codes along an error's cause chain (pg's SQLSTATE, or the socket's errno name). */
function causeCodes(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err as { code?: unknown; cause?: unknown; errors?: unknown } | undefined, i = 0; e && i < 6; i++) {
    if (typeof e.code === "string") out.push(e.code);
    // a host name with several addresses fails as an AggregateError of one error per address
    if (Array.isArray(e.errors)) for (const x of e.errors) if (typeof x?.code === "string") out.push(x.code);
    e = e.cause as typeof e;
  }
  return out;
}

/**
 * What to do about a PostgreSQL error: by its code first (SQLSTATE 28P01 is a wrong password,
 * ECONNREFUSED a port where nothing listens), so that a refused password is never blamed on the
 * host and port; by its words where it has no code.
 */
export function postgresHint(err: unknown): string {
  const codes = causeCodes(err);
  const message = err instanceof Error ? err.message : String(err);
  const has = (...c: string[]) => c.some((x) => codes.includes(x));
  if (
    has("28P01") ||
    /password authentication failed|SASL|no password supplied|client password must be a string/i.test(message)
  )
    return "the server answered and refused the password (SQLSTATE 28P01): set the right one as database.password, or in the secrets file (the ${VAR} in `database:`); the host and port are fine";
  if (/no pg_hba\.conf entry/i.test(message))
    return "the server does not let this host in: add a `host` line for it to pg_hba.conf and reload PostgreSQL";
  if (has("3D000") || /database "[^"]*" does not exist/i.test(message))
    return "create it: runuser -u postgres -- createdb --owner <role> <database> (docs/ha.md)";
  if (/role "[^"]*" does not exist/i.test(message))
    return "create the role: runuser -u postgres -- createuser --pwprompt <role> (docs/ha.md)";
  if (has("28000"))
    return "the server refused this user (SQLSTATE 28000): check the user in `database:` and pg_hba.conf";
  if (has("ECONNREFUSED") || /ECONNREFUSED/.test(message))
    return "nothing listens at that host and port: check the port in `database:`, that PostgreSQL runs, and its listen_addresses";
  if (has("ENOTFOUND", "EAI_AGAIN") || /ENOTFOUND|EAI_AGAIN/.test(message))
    return "the host name does not resolve: check the host in `database:`";
  if (has("ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH") || /timeout|ETIMEDOUT|EHOSTUNREACH/i.test(message))
    return "nothing answers there: check the host and port in `database:`, a firewall between, and PostgreSQL's listen_addresses";
  return "";
}

/**
 * A mailbox (imap.mailboxes): signed in as the daemon signs in (its password, or the token its
 * command prints), and its folder there. The done and failed folders are made at the first look.
 */
export async function mailboxCheck(m: MailboxConfig): Promise<Check> {
  const name = `imap ${m.name ?? `${m.user}@${m.host}`}`;
  const where = `${m.host}:${m.port}`;
  const { imapClient, mailboxCredentials } = await import("../mailbox/imap-connection.js");
  let client: ReturnType<typeof imapClient> | null = null;
  try {
    client = imapClient(m, await mailboxCredentials(m), {
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
    client.on("error", () => undefined);
    await client.connect();
    const folders = new Set((await client.list()).map((f) => f.path));
    if (!folders.has(m.folder))
      return {
        name,
        ok: false,
        detail: `signed in as ${m.user} at ${where}, but there is no folder "${m.folder}" (it has ${[...folders].slice(0, 8).join(", ")}); fix imap.mailboxes[].folder`,
      };
    const status = await client.status(m.folder, { messages: true });
    const held = status ? `${status.messages ?? 0} messages` : "an unknown number of messages";
    return { name, ok: true, detail: `signed in as ${m.user} at ${where}; ${m.folder} holds ${held}` };
  } catch (err) {
    return { name, ok: false, detail: `${where}: ${imapHint(err, m)}` };
  } finally {
    await client?.logout().catch(() => client?.close());
  }
}

/** What to do about an IMAP failure; never the password or the token. */
function imapHint(err: unknown, m: MailboxConfig): string {
  const e = err as { authenticationFailed?: boolean; code?: string; message?: string };
  if (e.authenticationFailed)
    return `the server refused the sign-in as ${m.user}: check ${m.password !== undefined ? "the password (in the secrets file)" : "that tokenCommand prints a current access token"}`;
  if (/token command/.test(e.message ?? "")) return `${e.message}: run the tokenCommand by hand as the faxgate user`;
  if (e.code === "ECONNREFUSED" || e.code === "ENOTFOUND" || e.code === "EAI_AGAIN")
    return `nothing answers there (${e.code}): check imap.mailboxes[].host and port`;
  if (e.code === "CONNECT_TIMEOUT" || e.code === "GREETING_TIMEOUT")
    return `the server did not answer in time (${e.code}): check the host, the port and the firewall`;
  if (/certificate|self.signed|SSL|TLS/i.test(`${e.code ?? ""} ${e.message ?? ""}`))
    return `TLS failed (${e.code ?? e.message}): check imap.mailboxes[].tls, or give the server's CA as caFile`;
  return `could not sign in: ${describeError(err)}`;
}

/**
 * The resolvers the public MX mode asks (smtp.senderAuth, dns.servers or the system's): they
 * must answer, or every stranger's mail is deferred with 451. "No such name" is an answer.
 */
export async function senderDnsCheck(c: Config): Promise<Check> {
  const name = "sender checks dns";
  const { makeResolver } = await import("../dns/resolver.js");
  const servers = c.dns.servers?.length ? c.dns.servers.join(", ") : "the system's resolvers";
  const probe = `_dmarc.${smtpSettings(c).domains[0]}`;
  const started = Date.now();
  try {
    const resolve = makeResolver(c.dns, { tries: 1 });
    const answer = await resolve(probe, "TXT").then(
      (records) => `${records.length} TXT record(s)`,
      (err: { code?: string }) => {
        if (err.code === "ENOTFOUND" || err.code === "ENODATA") return "no such record";
        throw err;
      },
    );
    return { name, ok: true, detail: `${servers} answered (${probe}: ${answer}) in ${Date.now() - started} ms` };
  } catch (err) {
    const code = (err as { code?: string }).code ?? describeError(err);
    return {
      name,
      ok: false,
      detail: `${servers} did not answer ${probe} (${code}): SPF, DKIM and DMARC cannot be checked, so mail from outside would get 451; fix dns.servers or the system's resolver`,
    };
  }
}
