// Reading the one config file: YAML -> ${ENV} substitution -> zod validation. Every error names the
// key (e.g. `users[1].apiKey`) and what was expected, so an admin can fix it without reading code.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { FaxgateError } from '../errors.js';
import { configSchema, SECRET_KEYS, type Config } from './schema.js';

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
}

/** Loads and validates a config file. Relative paths inside it are relative to the file's folder. */
export function loadConfigFile(file: string, opts: LoadOptions = {}): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new FaxgateError('CONFIG_NOT_FOUND', `cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
  const config = parseConfigText(text, { ...opts, source: file });
  return resolvePaths(config, path.dirname(path.resolve(file)));
}

export function parseConfigText(text: string, opts: LoadOptions & { source?: string } = {}): Config {
  const source = opts.source ?? 'config';
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` at line ${err.linePos[0].line}` : '';
    throw new FaxgateError('CONFIG_INVALID', `${source}: not valid YAML${where}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  if (raw === null || raw === undefined) raw = {};
  const substituted = substituteEnv(raw, opts.env ?? process.env, []);
  return validateConfig(substituted, source);
}

export function validateConfig(raw: unknown, source = 'config'): Config {
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${formatKey(i.path)}: ${describeIssue(i)}`);
    const first = result.error.issues[0];
    throw new FaxgateError('CONFIG_INVALID', `${source} is invalid:\n${lines.join('\n')}`, {
      field: first ? formatKey(first.path) : undefined,
    });
  }
  checkCrossKeys(result.data, source);
  return result.data;
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
  if (c.smtp?.auth === 'required' && c.users.some((u) => !u.password)) {
    const i = c.users.findIndex((u) => !u.password);
    problems.push([`users[${i}].password`, 'smtp.auth is "required" but this user has no password hash']);
  }
  if (c.api.baseUrl !== 'sandbox' && c.users.length === 0) {
    problems.push(['users', 'at least one user is needed with a real fax service']);
  }
  if (problems.length > 0) {
    throw new FaxgateError('CONFIG_INVALID', `${source} is invalid:\n${problems.map(([k, m]) => `  ${k}: ${m}`).join('\n')}`, { field: problems[0]![0] });
  }
}

function formatKey(p: ReadonlyArray<PropertyKey>): string {
  if (p.length === 0) return '(top level)';
  return p.reduce<string>((acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part)), '');
}

function describeIssue(i: z.core.$ZodIssue): string {
  switch (i.code) {
    case 'invalid_type':
      return `expected ${i.expected}${'input' in i && i.input === undefined ? ' (missing)' : ''}`;
    case 'unrecognized_keys':
      return `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')}`;
    case 'invalid_value':
      return `expected one of ${i.values.map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return i.message;
  }
}

// A default stops at the next "${": with `[^}]*` each of "${A:-" x 20,000 scanned to the end of
// the string (14 s, quadratic); now each scan ends where the next reference starts (linear).
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-((?:[^}$]|\$(?!\{))*))?\}/g;

/** `${NAME}` or `${NAME:-default}` in any string; an unset variable without a default is an error. */
function substituteEnv(value: unknown, env: NodeJS.ProcessEnv, at: Array<string | number>): unknown {
  if (typeof value === 'string') {
    return value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      throw new FaxgateError('CONFIG_INVALID', `${formatKey(at)}: environment variable ${name} is not set`, { field: formatKey(at) });
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...at, i]));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteEnv(v, env, [...at, k])]));
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
      transport: c.notify.transport.startsWith('outbox:') ? `outbox:${abs(c.notify.transport.slice('outbox:'.length))}` : c.notify.transport,
    },
  };
}

/** The folder of an `outbox:DIR` notification transport, or null for an SMTP transport. */
export function outboxDir(config: Config): string | null {
  const t = config.notify?.transport ?? '';
  return t.startsWith('outbox:') ? path.resolve(t.slice('outbox:'.length)) : null;
}

/** A deep copy with every secret replaced by "****" (and passwords in transport URLs hidden). */
export function maskSecrets<T>(value: T): T {
  const secretKeys = new Set<string>(SECRET_KEYS);
  const walk = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string') {
      if (key && secretKeys.has(key)) return '****';
      return v.replace(/^(smtps?:\/\/[^:/@]+:)[^@]*@/, '$1****@');
    }
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    return v;
  };
  return walk(value) as T;
}

/** Every secret string in a config, for log/output leak checks. */
export function secretValues(c: Config): string[] {
  const out = c.users.flatMap((u) => [u.apiKey, u.password ?? '']);
  if (c.api.adminKey) out.push(c.api.adminKey);
  return out.filter((s) => s.length > 0);
}
