// Credentials inside URLs (`database:`, `notify.transport`, ...), read by parsing, never by a
// pattern that stops at the first "@" or "/": a password may hold any of `@ / : # ? %`, and a
// mask that trusted a regular expression showed the tail of such a password.

const SCHEME = /^([a-z][a-z0-9+.-]*:\/\/)/i;
/** Query parameters that carry secrets (libpq's password, sslpassword, sslkey ...). */
const SECRET_PARAM = /pass|secret|key|token/i;

/**
 * The URL as it may be shown: the password replaced by `mask`, secret query parameters too.
 * Whatever stands before the last "@" is taken as user and password, so a password with raw
 * `@ / # ?` in it is hidden whole even where a URL parser would split it elsewhere; only the user
 * name (up to the first ":") is kept, and only when it has none of those characters.
 */
export function maskUrl(url: string, mask = "***"): string {
  const scheme = SCHEME.exec(url)?.[1];
  if (!scheme) return url; // not a URL (an e-mail address, a path): nothing to hide
  const afterScheme = url.slice(scheme.length);
  const at = afterScheme.lastIndexOf("@");
  let shown = url;
  if (at >= 0) {
    const userinfo = afterScheme.slice(0, at);
    const colon = userinfo.indexOf(":");
    const user = colon >= 0 ? userinfo.slice(0, colon) : userinfo;
    const userShown = /[/?#@]/.test(user) ? mask : user;
    shown = `${scheme}${userShown}${colon >= 0 ? `:${mask}` : ""}@${afterScheme.slice(at + 1)}`;
  }
  try {
    const u = new URL(shown);
    let changed = false;
    for (const k of [...u.searchParams.keys()])
      if (SECRET_PARAM.test(k)) {
        u.searchParams.set(k, mask);
        changed = true;
      }
    return changed ? u.toString() : shown;
  } catch {
    return `${scheme}(a URL that cannot be parsed; not shown)`;
  }
}

/**
 * Why a PostgreSQL URL cannot be read as its writer meant, or null. A password with `@ / : # ? %`
 * written into the URL as it is (not percent-encoded) splits it in the wrong place: the tail of
 * the password became the host, and the gateway then "could not reach" a host that does not exist.
 */
export function databaseUrlProblem(url: string): string | null {
  const scheme = SCHEME.exec(url)?.[1];
  if (!scheme) return null; // the schema's pattern says what a URL must look like
  const afterScheme = url.slice(scheme.length);
  const authorityEnd = afterScheme.search(/[/?#]/);
  const at = afterScheme.lastIndexOf("@");
  const fix =
    "give the password as database.password (database: {url: postgres://user@host/db, password: ${FAXGATE_DB_PASSWORD}}), or as ${VAR} from the secrets file, or percent-encode it (@ is %40, / is %2F, : is %3A, # is %23, ? is %3F, % is %25)";
  if (at >= 0 && authorityEnd >= 0 && authorityEnd < at)
    return `the part before "@" holds "/", "?" or "#": a password with such characters must not be written into the URL as it is; ${fix}`;
  if (at >= 0) {
    const userinfo = afterScheme.slice(0, at);
    if (userinfo.includes("@"))
      return `the URL has more than one "@": a password with "@" must not be written into the URL as it is; ${fix}`;
    if (/%(?![0-9A-Fa-f]{2})/.test(userinfo))
      return `the user or password holds a "%" that is not a percent-escape; ${fix}`;
  }
  try {
    new URL(url);
  } catch {
    return `not a URL that can be read (host, port or path); ${fix}`;
  }
  return null;
}

/** The URL with `password` as its password (percent-encoded, so any character may be in it). */
export function urlWithPassword(url: string, password: string): string {
  const scheme = SCHEME.exec(url)?.[1] ?? "";
  const rest = url.slice(scheme.length);
  const at = rest.lastIndexOf("@");
  const user = at >= 0 ? rest.slice(0, at).split(":")[0]! : "";
  const host = at >= 0 ? rest.slice(at + 1) : rest;
  return `${scheme}${user}:${encodeURIComponent(password)}@${host}`;
}

/**
 * `${NAME}` references in the user and password of a URL template, with their values
 * percent-encoded as they are put in: `postgres://faxgate:${DB_PASSWORD}@db/faxgate` then works
 * whatever characters the secrets file's password has. Elsewhere in the URL values go in as they are.
 */
export function substituteInUrl(
  template: string,
  ref: RegExp,
  value: (whole: string, name: string, fallback: string | undefined) => string,
): string {
  const scheme = SCHEME.exec(template)?.[1];
  // The template's own "@" (a ${NAME} holds none) ends the user and password.
  const at = scheme ? template.indexOf("@", scheme.length) : -1;
  if (!scheme || at < 0) return template.replace(ref, value);
  const encoded = (whole: string, name: string, fallback: string | undefined) => {
    const v = value(whole, name, fallback);
    return v === whole ? v : encodeURIComponent(v);
  };
  return (
    template.slice(0, scheme.length) +
    template.slice(scheme.length, at).replace(ref, encoded) +
    template.slice(at).replace(ref, value)
  );
}
