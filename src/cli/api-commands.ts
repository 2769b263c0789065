// Thin, complete wrappers over the fax service API: keys, contacts, history, download.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FaxgateError } from '../errors.js';
import { ACCESS_LEVELS, type AccessLevel, type ApiKey, type FaxRecord, type HistoryQuery } from '../fax/types.js';
import { formatFaxNumber, normalizeFaxNumber, toContactFormat } from '../intake/fax-number.js';
import { createReplacementKey } from '../keys/rotate.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { loadContext, pickUser, printJson, printTable, withClients, type GlobalOptions } from './context.js';

type Opts = GlobalOptions & { user?: string };

function access(s: string | undefined): AccessLevel {
  const a = (s ?? 'print_driver') as AccessLevel;
  if (!ACCESS_LEVELS.includes(a)) throw new FaxgateError('USAGE', `--access must be one of ${ACCESS_LEVELS.join(', ')}`);
  return a;
}

function keyRow(k: ApiKey) {
  return [k.uuid, k.name, k.access, k.user?.email ?? k.userId, k.expiresAt ?? 'never', k.createdAt];
}

function keyJson(k: ApiKey) {
  const { token: _token, ...rest } = k;
  return rest;
}

export async function keysList(opts: Opts & { all?: boolean }): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const userId = opts.user ? (await c.forUser(opts.user).me()).userId : undefined;
    const keys = await c.admin().listApiKeys(userId);
    if (opts.json) return printJson(keys.map(keyJson));
    printTable(['KEY ID', 'NAME', 'ACCESS', 'USER', 'EXPIRES', 'CREATED'], keys.map(keyRow));
  });
}

export async function keysCreate(opts: Opts & { name?: string; access?: string; expires?: string }): Promise<void> {
  const ctx = loadContext(opts);
  const user = pickUser(ctx, opts.user);
  await withClients(ctx, async (c) => {
    const me = await c.forUser(user.name).me();
    const key = await c.admin().createApiKey({
      name: opts.name ?? `faxgate ${user.name}`,
      userId: me.userId,
      access: access(opts.access),
      expiresAt: opts.expires ? new Date(opts.expires).toISOString() : undefined,
    });
    if (opts.json) return printJson(key);
    process.stdout.write(`created key ${key.uuid} (${key.access}) for ${me.email}\n${key.token}\n`);
  });
}

export async function keysDelete(ids: string[], opts: Opts): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    for (const id of ids) {
      await c.admin().deleteApiKey(id);
      process.stdout.write(`deleted key ${id}\n`);
    }
  });
}

/**
 * New key, proven to work; then either the config file is updated (--write: only where the old key
 * stands literally in it) and the running daemon told (SIGHUP), and the old key deleted after a grace
 * period; or the new key is printed with the command that deletes the old one after the switch.
 */
export async function keysRotate(opts: Opts & { write?: boolean; graceSeconds?: string }): Promise<void> {
  const ctx = loadContext(opts);
  const user = pickUser(ctx, opts.user);
  await withClients(ctx, async (c) => {
    const plan = await createReplacementKey({
      admin: c.admin(),
      current: c.withKey(user.apiKey),
      currentToken: user.apiKey,
      clientWithKey: (t) => c.withKey(t),
      userName: user.name,
      now: new Date(),
    });
    const oldId = plan.oldKey?.uuid;
    if (!opts.write || !ctx.configFile) {
      process.stdout.write(
        `new key for ${user.name} (${plan.newKey.uuid}), proven to work:\n${plan.newKey.token}\n\n` +
          `Put it in the config as users[name=${user.name}].apiKey (or its environment variable), reload the daemon\n` +
          `(systemctl reload faxgate, or kill -HUP), then delete the old key:\n` +
          (oldId ? `  faxgate keys delete ${oldId}\n` : '  (the old key could not be identified: delete it with `faxgate keys list` / `keys delete`)\n'),
      );
      return;
    }
    const text = readFileSync(ctx.configFile, 'utf8');
    if (!text.includes(user.apiKey)) {
      throw new FaxgateError('USAGE', `the key of ${user.name} is not written literally in ${ctx.configFile} (an environment variable?); run without --write and update it there. New key ${plan.newKey.uuid} was created: ${plan.newKey.token}`);
    }
    await writeFileAtomic(ctx.configFile, text.split(user.apiKey).join(plan.newKey.token), 0o640);
    process.stdout.write(`updated ${ctx.configFile}: users[${user.name}].apiKey is now key ${plan.newKey.uuid}\n`);
    signalDaemon(ctx.config.data);
    const grace = Number(opts.graceSeconds ?? '10');
    if (oldId) {
      await new Promise((r) => setTimeout(r, grace * 1000));
      await c.admin().deleteApiKey(oldId);
      process.stdout.write(`deleted the old key ${oldId}\n`);
    }
  });
}

function signalDaemon(dataDir: string): void {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'faxgate.pid'), 'utf8').trim());
    if (pid > 0) {
      process.kill(pid, 'SIGHUP');
      process.stdout.write(`told the running daemon (pid ${pid}) to reload\n`);
    }
  } catch {
    process.stdout.write('no running daemon found; it will use the new key when started\n');
  }
}

export async function contactsList(opts: Opts & { query?: string; limit?: string }): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const page = await c.forUser(opts.user).listContacts({ query: opts.query, limit: opts.limit ? Number(opts.limit) : 100 });
    if (opts.json) return printJson(page);
    const rows = page.rows.flatMap((r) => [r, ...(r.contacts ?? []).map((m) => ({ ...m, name: `  ${m.name}` }))]);
    printTable(['CONTACT ID', 'NAME', 'FAX', 'EMAIL', 'KIND'], rows.map((r) => [r.uuid, r.name, r.faxNumber, r.email, r.isOrganization ? 'organization' : r.isPublic ? 'public' : '']));
    process.stdout.write(`${page.count} in all\n`);
  });
}

function contactFax(ctx: ReturnType<typeof loadContext>, fax?: string): string | undefined {
  if (fax === undefined) return undefined;
  const n = normalizeFaxNumber(fax, ctx.config.smtp?.defaultCountryCode ?? '1');
  if (!n.ok) throw new FaxgateError('BAD_NUMBER', `--fax: ${n.reason}`);
  return toContactFormat(n.e164);
}

export async function contactsAdd(opts: Opts & { name: string; fax?: string; email?: string; phone?: string; organization?: boolean; public?: boolean; org?: string }): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const created = await c.forUser(opts.user).createContact({
      name: opts.name,
      faxNumber: contactFax(ctx, opts.fax),
      email: opts.email,
      phoneNumber: opts.phone,
      isOrganization: opts.organization,
      isPublic: opts.public,
      organizationId: opts.org,
    });
    if (opts.json) return printJson(created);
    process.stdout.write(`created contact ${created.uuid} ${created.name}\n`);
  });
}

export async function contactsUpdate(id: string, opts: Opts & { name?: string; fax?: string; email?: string; phone?: string }): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const updated = await c.forUser(opts.user).updateContact(id, { name: opts.name, faxNumber: contactFax(ctx, opts.fax), email: opts.email, phoneNumber: opts.phone });
    if (opts.json) return printJson(updated);
    process.stdout.write(`updated contact ${updated.uuid} ${updated.name}\n`);
  });
}

export async function contactsDelete(ids: string[], opts: Opts): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const api = c.forUser(opts.user);
    if (ids.length === 1) await api.deleteContact(ids[0]!);
    else await api.deleteContacts(ids);
    process.stdout.write(`deleted ${ids.length} contact${ids.length === 1 ? '' : 's'}\n`);
  });
}

export async function historyCommand(opts: Opts & { direction?: string; status?: string; from?: string; to?: string; query?: string; limit?: string; offset?: string; all?: boolean; archived?: boolean }): Promise<void> {
  const ctx = loadContext(opts);
  const q: HistoryQuery = {
    direction: opts.direction as HistoryQuery['direction'],
    status: opts.status as HistoryQuery['status'],
    fromDate: opts.from,
    toDate: opts.to,
    query: opts.query,
    limit: opts.limit ? Number(opts.limit) : 50,
    offset: opts.offset ? Number(opts.offset) : undefined,
    isArchived: opts.archived,
  };
  await withClients(ctx, async (c) => {
    const api = c.forUser(opts.user);
    let rows: FaxRecord[];
    let count: number;
    if (opts.all) {
      rows = [];
      for await (const r of api.historyAll(q)) rows.push(r);
      count = rows.length;
    } else {
      const page = await api.history(q);
      rows = page.rows;
      count = page.count;
    }
    if (opts.json) return printJson({ count, rows });
    printTable(
      ['MESSAGE ID', 'DIRECTION', 'STATUS', 'NUMBER', 'PAGES', 'CREATED', 'RESULT'],
      rows.map((r) => [r.messageId, r.direction, r.status, r.faxNumber ? formatFaxNumber(r.faxNumber) : '', r.pagesCount, r.createdAt, r.errorInfo ?? r.resultInfo]),
    );
    process.stdout.write(`${rows.length} shown of ${count}\n`);
  });
}

export async function downloadCommand(messageId: string, opts: Opts & { output?: string }): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const dest = path.resolve(opts.output ?? `${messageId}.pdf`);
    const r = await c.forUser(opts.user).downloadFax(messageId, dest);
    process.stdout.write(`${dest} (${r.bytes} bytes)\n`);
  });
}
