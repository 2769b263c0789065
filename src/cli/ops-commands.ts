// `config check`, `doctor`, `passwd`: the admin's checks before and after a deployment.
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import net from 'node:net';
import { stringify } from 'yaml';
import { maskSecrets, outboxDir } from '../config/load.js';
import { describeError, FaxgateError } from '../errors.js';
import { hashPassword } from '../smtp/password.js';
import { parseHostPort } from '../config/host-port.js';
import { riskySettings } from '../config/risky-settings.js';
import { findKey } from '../keys/rotate.js';
import { loadContext, withClients, type GlobalOptions } from './context.js';

export function configCheckCommand(opts: GlobalOptions): void {
  const ctx = loadContext(opts);
  const masked = maskSecrets(ctx.config);
  if (opts.json) process.stdout.write(`${JSON.stringify(masked, null, 2)}\n`);
  else {
    process.stderr.write(`${ctx.configFile ?? '(built-in sandbox config)'}: OK\n`);
    process.stdout.write(stringify(masked));
  }
}

type Check = { name: string; ok: boolean; detail: string; warn?: boolean };

function canBind(hostPort: string): Promise<string | null> {
  const { host, port } = parseHostPort(hostPort, 'listen');
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE' ? 'in use (is faxgate already running?)' : `${err.code ?? err.message}`));
    s.listen(port, host, () => s.close(() => resolve(null)));
  });
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

export async function doctorCommand(opts: GlobalOptions): Promise<number> {
  const ctx = loadContext(opts);
  const c = ctx.config;
  const checks: Check[] = [{ name: 'config', ok: true, detail: ctx.configFile ?? 'built-in sandbox config' }];
  checks.push(folderCheck('data folder', c.data));
  if (c.spool) checks.push(folderCheck('spool root', c.spool.root));
  const outbox = outboxDir(c);
  if (outbox) checks.push(folderCheck('outbox', outbox));
  for (const addr of [...(c.smtp?.listen ?? []), ...(c.admin ? [c.admin.listen] : [])]) {
    const problem = await canBind(addr);
    checks.push({ name: `listen ${addr}`, ok: problem === null, detail: problem ?? 'free', warn: problem?.startsWith('in use') });
  }
  if (c.smtp?.tls) {
    for (const f of [c.smtp.tls.cert, c.smtp.tls.key]) {
      checks.push({ name: 'smtp.tls', ok: existsSync(f), detail: existsSync(f) ? `${f} present` : `${f} missing` });
    }
  }
  try {
    await withClients(ctx, async (api) => {
      for (const u of c.users) {
        try {
          const me = await api.withKey(u.apiKey).me();
          checks.push({ name: `api key of ${u.name}`, ok: true, detail: `works (${me.email}, account timezone ${me.account?.timezone ?? '?'})` });
          if (api.service.adminKey) {
            const key = await findKey(api.admin(), me.userId, u.apiKey);
            if (key?.expiresAt) {
              const days = (Date.parse(key.expiresAt) - Date.now()) / 86_400_000;
              checks.push({ name: `key expiry of ${u.name}`, ok: days > 0, warn: days < 14, detail: `expires ${key.expiresAt} (in ${Math.floor(days)} days)` });
            }
          }
        } catch (err) {
          checks.push({ name: `api key of ${u.name}`, ok: false, detail: describeError(err) });
        }
      }
    });
  } catch (err) {
    checks.push({ name: 'fax service', ok: false, detail: describeError(err) });
  }
  for (const risk of riskySettings(c)) checks.push({ name: 'risky setting', ok: true, warn: true, detail: risk });
  if (opts.json) process.stdout.write(`${JSON.stringify(checks, null, 2)}\n`);
  else for (const ch of checks) process.stdout.write(`${ch.ok ? (ch.warn ? 'WARN' : 'ok  ') : 'FAIL'}  ${ch.name}: ${ch.detail}\n`);
  return checks.every((ch) => ch.ok) ? 0 : 1;
}

async function readPassword(): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    // The first line only: `echo pw | faxgate passwd` or a here-doc must not hash the newline,
    // nor anything piped after it (a whole file would become one "password").
    let text = '';
    for await (const chunk of stdin) {
      text += chunk;
      if (text.includes('\n')) break;
    }
    const first = text.split(/\r?\n/)[0] ?? '';
    if (first === '') throw new FaxgateError('USAGE', 'no password on stdin: its first line is empty');
    return first;
  }
  process.stderr.write('Password: ');
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let pw = '';
    const onData = (ch: string) => {
      for (const c of ch) {
        if (c === '\r' || c === '\n') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          resolve(pw);
          return;
        }
        if (c === '\u0003') {
          stdin.setRawMode(false);
          reject(new Error('cancelled'));
          return;
        }
        if (c === '\u007f') pw = pw.slice(0, -1);
        else pw += c;
      }
    };
    stdin.on('data', onData);
  });
}

export async function passwdCommand(): Promise<void> {
  const pw = await readPassword();
  if (pw.length < 8) throw new Error('the password must have at least 8 characters');
  process.stdout.write(`${await hashPassword(pw)}\n`);
}
