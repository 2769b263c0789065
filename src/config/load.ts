// Reading the one config file: YAML -> ${ENV} substitution -> zod validation. Every error names the
// key (e.g. `users[1].apiKey`) and what was expected, so an admin can fix it without reading code.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml, YAMLParseError } from "yaml";
import type { z } from "zod";
import { FaxgateError } from "../errors.js";
import { renameOldKeys, type OldKeyUse } from "./old-keys.js";
import { configSchema, SECRET_KEYS, type Config } from "./schema.js";
import { moveOldRetentionKeys } from "./retention.js";
import { readSecretsFile } from "./secrets-file.js";
import { maskUrl, substituteInUrl } from "./url-secrets.js";

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /**
   * Leave a secret (apiKey, adminKey, password) whose variable is unset as the literal `${NAME}`
   * and report it in `unset`, instead of refusing the config: the CLI needs a secret only in the
   * command that uses it (`faxgate jobs` reads the queue and no key at all).
   */
  lenientSecrets?: boolean;
}

/** A `${NAME}` whose variable is set neither in the environment nor in the secrets file. */
export interface UnsetSecret {
  name: string;
  /** the config key it stands in, e.g. users[0].apiKey */
  key: string;
}

export interface LoadedConfig {
  config: Config;
  unset: UnsetSecret[];
  /** the secrets file read (absolute), if the config names one */
  secretsFile: string | null;
  /** why the secrets file could not be read (lenient mode only; strict mode throws) */
  secretsProblem?: string;
  /** keys of older releases the file still uses, and what to write instead (config/old-keys.ts) */
  oldKeys: OldKeyUse[];
}

/** Loads and validates a config file. Relative paths inside it are relative to the file's folder. */
export function loadConfigFile(file: string, opts: LoadOptions = {}): Config {
  return loadConfigFileDetailed(file, opts).config;
}

export function loadConfigFileDetailed(file: string, opts: LoadOptions = {}): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new FaxgateError(
      "CONFIG_NOT_FOUND",
      `cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { cause: err },
    );
  }
  const base = path.dirname(path.resolve(file));
  const loaded = parseConfigTextDetailed(text, { ...opts, source: file, base });
  return { ...loaded, config: resolvePaths(loaded.config, base) };
}

export function parseConfigText(text: string, opts: LoadOptions & { source?: string } = {}): Config {
  return parseConfigTextDetailed(text, opts).config;
}

/** The `${NAME}` placeholder a lenient load leaves for an unset secret, or null for a real value. */
export function unsetSecretName(value: string | undefined): string | null {
  const m = value === undefined ? null : /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}$/.exec(value);
  return m ? m[1]! : null;
}

/**
 * A config file is a few KB (every key of config/faxgate.example.yaml, with comments, is under
 * 40); a megabyte is a mistake or an attack. Refused before YAML reads it: the yaml package's
 * double-quoted scalars grow in time faster than their length past about 600 KB (test/faults/
 * super-linear.test.ts: 3.7 ms for 320 KB, 63 ms for 640 KB, 148 ms for 1.3 MB).
 */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** The YAML text as plain data (an empty file: {}); a syntax error names its line. */
function readYaml(text: string, source: string): unknown {
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` at line ${err.linePos[0].line}` : "";
    throw new FaxgateError(
      "CONFIG_INVALID",
      `${source}: not valid YAML${where}: ${(err as Error).message.split("\n")[0]}`,
      { cause: err },
    );
  }
  return raw ?? {};
}

/**
 * The environment `${NAME}` is read from: the secrets file's NAME=VALUE lines over the process's.
 * It is read afresh on every load, which is what makes SIGHUP pick up an edited key.
 */
function readNamedSecrets(
  raw: unknown,
  opts: LoadOptions & { base?: string },
): { env: NodeJS.ProcessEnv; secretsFile: string | null; secretsProblem?: string } {
  const env: NodeJS.ProcessEnv = opts.env ?? process.env;
  const named = (raw as Record<string, unknown>)?.secretsFile;
  if (typeof named !== "string" || named.length === 0) return { env, secretsFile: null };
  const secretsFile = path.isAbsolute(named) ? named : path.resolve(opts.base ?? process.cwd(), named);
  try {
    return { env: { ...env, ...readSecretsFile(secretsFile) }, secretsFile };
  } catch (err) {
    if (!opts.lenientSecrets) throw err;
    return { env, secretsFile, secretsProblem: (err as Error).message };
  }
}

export function parseConfigTextDetailed(
  text: string,
  opts: LoadOptions & { source?: string; base?: string } = {},
): LoadedConfig {
  const source = opts.source ?? "config";
  const size = Buffer.byteLength(text, "utf8");
  if (size > MAX_CONFIG_BYTES) {
    throw new FaxgateError(
      "CONFIG_INVALID",
      `${source}: is ${size} bytes; a config file may have at most ${MAX_CONFIG_BYTES} (1 MB)`,
    );
  }
  const raw = readYaml(text, source);
  const { env, secretsFile, secretsProblem } = readNamedSecrets(raw, opts);
  const missing: Array<UnsetSecret & { secret: boolean }> = [];
  const substituted = substituteEnv(raw, env, [], missing);
  const fatal = opts.lenientSecrets ? missing.filter((m) => !m.secret) : missing;
  if (fatal.length > 0) {
    const where = secretsFile
      ? `the environment or the secrets file ${secretsFile}`
      : "the environment (or name a secrets file with the key secretsFile)";
    const list = fatal.map((m) => `${m.name} (${m.key})`).join(", ");
    throw new FaxgateError(
      "CONFIG_INVALID",
      `${source}: ${fatal.length === 1 ? "environment variable" : "environment variables"} not set: ${list}; set ${fatal.length === 1 ? "it" : "them"} in ${where}${secretsProblem ? ` (${secretsProblem})` : ""}`,
      {
        field: fatal[0]!.key,
      },
    );
  }
  // A config file must say where faxes go: defaulting to the embedded emulator would "deliver"
  // faxes that never left the machine. Only no config at all means the sandbox.
  const api = (substituted as { api?: unknown }).api;
  const hasBaseUrl = api !== null && typeof api === "object" && (api as { baseUrl?: unknown }).baseUrl !== undefined;
  const noBaseUrl = hasBaseUrl
    ? null
    : 'api.baseUrl: missing: name the fax service (its https:// URL), or write "sandbox" for the embedded emulator';
  let config: Config;
  let oldKeys: OldKeyUse[];
  try {
    ({ config, oldKeys } = validateConfigDetailed(substituted, source));
  } catch (err) {
    if (noBaseUrl && err instanceof FaxgateError && err.code === "CONFIG_INVALID") {
      throw new FaxgateError("CONFIG_INVALID", err.message.replace(/:\n/, `:\n  ${noBaseUrl}\n`), {
        field: "api.baseUrl",
        cause: err,
      });
    }
    throw err;
  }
  if (noBaseUrl)
    throw new FaxgateError("CONFIG_INVALID", `${source} is invalid:\n  ${noBaseUrl}`, { field: "api.baseUrl" });
  const resolvedFile = secretsFile;
  return {
    config: resolvedFile ? { ...config, secretsFile: resolvedFile } : config,
    unset: missing.map(({ name, key }) => ({ name, key })),
    secretsFile: resolvedFile,
    secretsProblem,
    oldKeys,
  };
}

/** Inbound rules name users and groups that must exist; each problem names its rule. */
function inboundProblems(c: Config, users: Set<string>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const groups = c.inbound.groups;
  for (const [g, def] of Object.entries(groups)) {
    def.members.forEach((m, j) => {
      if (!users.has(m))
        out.push([`inbound.groups.${g}.members[${j}]`, `group "${g}": "${m}" is not a configured user`]);
    });
    if (def.escalateTo && !def.escalateTo.includes("@") && !users.has(def.escalateTo)) {
      out.push([
        `inbound.groups.${g}.escalateTo`,
        `group "${g}": "${def.escalateTo}" is neither a configured user nor a mail address`,
      ]);
    }
  }
  const check = (where: string, rule: string, ds: Config["inbound"]["default"]) => {
    ds.forEach((d, j) => {
      if ("users" in d)
        for (const u of d.users)
          if (!users.has(u)) out.push([`${where}.deliver[${j}].users`, `${rule}: "${u}" is not a configured user`]);
      if ("inbox" in d && !groups[d.inbox])
        out.push([`${where}.deliver[${j}].inbox`, `${rule}: no group "${d.inbox}" in inbound.groups`]);
    });
  };
  const seen = new Set<string>();
  c.inbound.routes.forEach((r, i) => {
    const rule = `rule "${r.name}"`;
    if (seen.has(r.name)) out.push([`inbound.routes[${i}].name`, `${rule}: another rule has this name`]);
    seen.add(r.name);
    if (r.match.user && !users.has(r.match.user))
      out.push([`inbound.routes[${i}].match.user`, `${rule}: "${r.match.user}" is not a configured user`]);
    check(`inbound.routes[${i}]`, rule, r.deliver);
  });
  check("inbound.default", "the default route", c.inbound.default);
  return out;
}

export function validateConfig(raw: unknown, source = "config"): Config {
  return validateConfigDetailed(raw, source).config;
}

/** Renames old keys (reporting each), then checks the result against the schema and the cross-key rules. */
export function validateConfigDetailed(raw: unknown, source = "config"): { config: Config; oldKeys: OldKeyUse[] } {
  // the retention keys of before are read as the retention section (warned: retention.oldKeys),
  // the other keys of before are renamed (old-keys.ts)
  const renamed = renameOldKeys(moveOldRetentionKeys(raw));
  const result = configSchema.safeParse(renamed.raw);
  if (!result.success || renamed.problems.length > 0) {
    // a value moved from an old key is refused under its new name: say where it was written
    const writtenAs = new Map(renamed.uses.map((u) => [u.now, u.old]));
    const issues = result.success ? [] : result.error.issues;
    const lines = [
      ...renamed.problems.map((p) => [p.key, p.message] as const),
      ...issues.map((i) => {
        const key = formatKey(i.path.slice(0, writtenAs.has(formatKey(i.path.slice(0, -1))) ? -1 : undefined));
        const old = writtenAs.get(key);
        const note = old && old !== key ? ` (written as ${old})` : "";
        return [formatKey(i.path), `${describeIssue(i)}${note}`] as const;
      }),
    ];
    throw new FaxgateError(
      "CONFIG_INVALID",
      `${source} is invalid:\n${lines.map(([k, m]) => `  ${k}: ${m}`).join("\n")}`,
      {
        field: lines[0]?.[0],
      },
    );
  }
  checkCrossKeys(result.data, source);
  return { config: result.data, oldKeys: renamed.uses };
}

/** Rules that involve more than one key. */
function checkCrossKeys(c: Config, source: string): void {
  const problems: Array<[string, string]> = [];
  const names = new Set<string>();
  const addresses = new Map<string, string>();
  c.users.forEach((u, i) => {
    if (names.has(u.name)) problems.push([`users[${i}].name`, `"${u.name}" is used by another user`]);
    names.add(u.name);
    for (const a of [u.email, ...u.aliases]) {
      const key = a.toLowerCase();
      const other = addresses.get(key);
      if (other && other !== u.name) problems.push([`users[${i}].email`, `${a} also belongs to user "${other}"`]);
      addresses.set(key, u.name);
    }
  });
  // One key per user: the service knows a fax by its key alone, so a shared key charges every
  // fax of one user to the other and sends one user's received faxes to the other.
  const keys = new Map<string, string>();
  const mints = c.directory?.keys !== undefined && c.api.adminKey !== undefined;
  c.users.forEach((u, i) => {
    // no key written: the gateway mints one (keys/key-minter.ts), which needs the admin key and a seal
    if (u.apiKey === "") {
      if (!mints)
        problems.push([
          `users[${i}].apiKey`,
          `user "${u.name}" has no apiKey: write their key, or let the gateway mint one (set directory.keys and api.adminKey, and give serviceUserId or run faxgate directory map)`,
        ]);
      return;
    }
    const other = keys.get(u.apiKey);
    if (other !== undefined && other !== u.name)
      problems.push([
        `users[${i}].apiKey`,
        `users "${other}" and "${u.name}" have the same API key: the service would take every fax of one as the other's, and deliver one's received faxes to the other; give each user their own key (faxgate keys create)`,
      ]);
    else keys.set(u.apiKey, u.name);
  });
  // One print folder per user: a shared one would fax one user's documents with another's key.
  // Compared without case, as Samba clients on Windows and macOS see these folders.
  const folders = new Map<string, string>();
  c.users.forEach((u, i) => {
    const folder = u.spool ?? u.name;
    const other = folders.get(folder.toLowerCase());
    if (other !== undefined && other !== u.name)
      problems.push([
        `users[${i}].spool`,
        `spool folder "${folder}" of user "${u.name}" is also the spool folder of user "${other}"`,
      ]);
    else folders.set(folder.toLowerCase(), u.name);
  });
  if (c.smtp?.auth === "required" && c.users.some((u) => !u.password)) {
    const i = c.users.findIndex((u) => !u.password);
    problems.push([`users[${i}].password`, 'smtp.auth is "required" but this user has no password hash']);
  }
  problems.push(...inboundProblems(c, names));
  if (c.api.baseUrl !== "sandbox" && c.users.length === 0) {
    problems.push(["users", "at least one user is needed with a real fax service"]);
  }
  if (problems.length > 0) {
    throw new FaxgateError(
      "CONFIG_INVALID",
      `${source} is invalid:\n${problems.map(([k, m]) => `  ${k}: ${m}`).join("\n")}`,
      { field: problems[0]![0] },
    );
  }
}

function formatKey(p: ReadonlyArray<PropertyKey>): string {
  if (p.length === 0) return "(top level)";
  return p.reduce<string>(
    (acc, part) => (typeof part === "number" ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part)),
    "",
  );
}

function describeIssue(i: z.core.$ZodIssue): string {
  switch (i.code) {
    case "invalid_type":
      return `expected ${i.expected}${"input" in i && i.input === undefined ? " (missing)" : ""}`;
    case "unrecognized_keys":
      return `unknown key${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `"${k}"`).join(", ")}`;
    case "invalid_value":
      return `expected one of ${i.values.map((v) => JSON.stringify(v)).join(", ")}`;
    default:
      return i.message;
  }
}

// A default stops at the next "${": with `[^}]*` each of "${A:-" x 20,000 scanned to the end of
// the string (14 s, quadratic); now each scan ends where the next reference starts (linear).
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-((?:[^}$]|\$(?!\{))*))?\}/g;

/**
 * `${NAME}` or `${NAME:-default}` in any string. An unset variable without a default is collected
 * in `missing` (every one, so the admin fixes them all in one go) and left as written.
 */
function substituteEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  at: Array<string | number>,
  missing: Array<UnsetSecret & { secret: boolean }>,
): unknown {
  if (typeof value === "string") {
    const last = [...at].reverse().find((p) => typeof p === "string");
    const secret = (SECRET_KEYS as readonly string[]).includes(String(last));
    const replace = (whole: string, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== "") return v;
      if (fallback !== undefined) return fallback;
      missing.push({ name, key: formatKey(at), secret });
      return whole;
    };
    // A password put into the database URL is percent-encoded on the way in: `@ / : # ? %` in it
    // must not split the URL (the tail of the password became the host).
    const inDatabaseUrl = at[0] === "database" && (at.length === 1 || (at.length === 2 && at[1] === "url"));
    return inDatabaseUrl ? substituteInUrl(value, ENV_REF, replace) : value.replace(ENV_REF, replace);
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...at, i], missing));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteEnv(v, env, [...at, k], missing)]));
  }
  return value;
}

function resolvePaths(c: Config, base: string): Config {
  const abs = (p: string) => (path.isAbsolute(p) ? p : path.resolve(base, p));
  return {
    ...c,
    data: abs(c.data),
    api: { ...c.api, caFile: c.api.caFile ? abs(c.api.caFile) : undefined },
    smtp: c.smtp && { ...c.smtp, tls: c.smtp.tls && { cert: abs(c.smtp.tls.cert), key: abs(c.smtp.tls.key) } },
    spool: c.spool && { ...c.spool, root: abs(c.spool.root) },
    notify: c.notify && {
      ...c.notify,
      transport: c.notify.transport.startsWith("outbox:")
        ? `outbox:${abs(c.notify.transport.slice("outbox:".length))}`
        : c.notify.transport,
    },
  };
}

/** The folder of an `outbox:DIR` notification transport, or null for an SMTP transport. */
export function outboxDir(config: Config): string | null {
  const t = config.notify?.transport ?? "";
  return t.startsWith("outbox:") ? path.resolve(t.slice("outbox:".length)) : null;
}

/** A deep copy with every secret replaced by "****" (and passwords in transport URLs hidden). */
export function maskSecrets<T>(value: T): T {
  const secretKeys = new Set<string>(SECRET_KEYS);
  const walk = (v: unknown, key?: string): unknown => {
    if (typeof v === "string") {
      if (key && secretKeys.has(key)) return "****";
      return maskUrl(v, "****");
    }
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    return v;
  };
  return walk(value) as T;
}

/** Every secret string in a config, for log/output leak checks. */
export function secretValues(c: Config): string[] {
  const out = c.users
    .flatMap((u) => [u.apiKey, u.password ?? ""])
    .filter((s) => s !== "" && unsetSecretName(s) === null);
  if (c.api.adminKey) out.push(c.api.adminKey);
  if (c.webhooks) out.push(c.webhooks.password);
  if (c.database) {
    try {
      const pw = decodeURIComponent(new URL(c.database).password);
      if (pw && unsetSecretName(pw) === null) out.push(pw);
    } catch {
      // an unparsable URL is refused when the store opens
    }
  }
  return out.filter((s) => s.length > 0);
}
