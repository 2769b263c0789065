// Thin, complete wrappers over the fax service API: keys, contacts, history, download.
import { smtpSettings } from "../config/schema.js";
import { accessSync, chownSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { replaceSecret } from "../config/secrets-file.js";
import path from "node:path";
import { describeError, FaxgateError } from "../errors.js";
import {
  ACCESS_LEVELS,
  type AccessLevel,
  type ApiKey,
  type FaxApi,
  type FaxRecord,
  type HistoryQuery,
} from "../fax/types.js";
import { faxNumber } from "../format.js";
import { formatFaxNumber, normalizeFaxNumber, toContactFormat } from "../recipients/fax-number.js";
import { createReplacementKey } from "../keys/rotate.js";
import { writeFileAtomic } from "../fs/atomic.js";
import {
  loadContext,
  pickUser,
  printJson,
  printTable,
  withClients,
  withStore,
  type ApiClients,
  type CliContext,
  type GlobalOptions,
} from "./context.js";

type Opts = GlobalOptions & { user?: string };

function access(s: string | undefined): AccessLevel {
  const a = (s ?? "print_driver") as AccessLevel;
  if (!ACCESS_LEVELS.includes(a))
    throw new FaxgateError("USAGE", `--access must be one of ${ACCESS_LEVELS.join(", ")}`);
  return a;
}

function keyRow(k: ApiKey) {
  return [k.uuid, k.name, k.access, k.user?.email ?? k.userId, k.expiresAt ?? "never", k.createdAt];
}

function keyJson(k: ApiKey) {
  const { token: _token, ...rest } = k;
  return rest;
}

export async function keysList(opts: Opts & { all?: boolean }): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const userId = opts.user ? (await c.forUser(opts.user).me()).userId : undefined;
    const keys = await c.admin("`faxgate keys list`").listApiKeys(userId);
    if (opts.json) return printJson(keys.map(keyJson));
    printTable(["KEY ID", "NAME", "ACCESS", "USER", "EXPIRES", "CREATED"], keys.map(keyRow));
  });
}

export async function keysCreate(opts: Opts & { name?: string; access?: string; expires?: string }): Promise<void> {
  const ctx = loadContext(opts);
  const user = pickUser(ctx, opts.user);
  await withClients(ctx, async (c) => {
    const me = await c.forUser(user.name).me();
    const key = await c.admin("`faxgate keys create`").createApiKey({
      name: opts.name ?? `faxgate ${user.name}`,
      userId: me.userId,
      access: access(opts.access),
      expiresAt: opts.expires,
    });
    if (opts.json) return printJson(key);
    process.stdout.write(`created key ${key.uuid} (${key.access}) for ${me.email}\n${key.token}\n`);
  });
}

export async function keysDelete(ids: string[], opts: Opts): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    for (const id of ids) {
      await c.admin("`faxgate keys delete`").deleteApiKey(id);
      process.stdout.write(`deleted key ${id}\n`);
    }
  });
}

/** Where a user's key is written, found (and proven writable) before any key is created. */
interface KeyHome {
  file: string;
  what: string;
  rewrite: (text: string, token: string) => string;
}

function findKeyHome(ctx: CliContext, userName: string): KeyHome {
  if (!ctx.configFile) {
    throw new FaxgateError(
      "USAGE",
      "the sandbox has no config file to write a key to: run `faxgate keys rotate` without --write (it prints the new key), or give --config",
    );
  }
  const configFile = ctx.configFile;
  const raw = parseYaml(readFileSync(configFile, "utf8")) as {
    users?: Array<{ name?: string; apiKey?: unknown }>;
  } | null;
  const index = raw?.users?.findIndex((u) => u?.name === userName) ?? -1;
  const written = index >= 0 ? raw!.users![index]!.apiKey : undefined;
  if (typeof written !== "string") throw new FaxgateError("USAGE", `user ${userName} has no apiKey in ${configFile}`);
  const key = `users[${index}].apiKey`;
  let home: KeyHome;
  const ref = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}$/.exec(written.trim());
  if (!written.includes("${")) {
    home = {
      file: configFile,
      what: `${configFile} (${key})`,
      rewrite: (text, token) => {
        if (!text.includes(written))
          throw new FaxgateError("USAGE", `${configFile} changed meanwhile: its ${key} is no longer there`);
        return text.split(written).join(token);
      },
    };
  } else if (
    ref &&
    ctx.secretsFile &&
    existsSync(ctx.secretsFile) &&
    replaceSecret(readFileSync(ctx.secretsFile, "utf8"), ref[1]!, "x") !== null
  ) {
    const name = ref[1]!;
    home = {
      file: ctx.secretsFile,
      what: `${ctx.secretsFile} (${name}, read by ${key})`,
      rewrite: (text, token) => {
        const next = replaceSecret(text, name, token);
        if (next === null)
          throw new FaxgateError("USAGE", `${ctx.secretsFile} changed meanwhile: it has no ${name} line any more`);
        return next;
      },
    };
  } else {
    const where = ref
      ? `${key} is ${written.trim()}, and ${ref[1]} is ${ctx.secretsFile ? `not a line of the secrets file ${ctx.secretsFile}` : "set in the environment, not in a file faxgate reads (name one with the config key secretsFile)"}`
      : `${key} mixes text and variables (${written})`;
    throw new FaxgateError(
      "USAGE",
      `cannot --write the key of ${userName}: ${where}. No key was created; run without --write to get a new key printed, and put it there yourself`,
      { field: key },
    );
  }
  for (const [target, mode] of [
    [home.file, constants.R_OK | constants.W_OK],
    [path.dirname(home.file), constants.W_OK],
  ] as const) {
    try {
      accessSync(target, mode);
    } catch (err) {
      throw new FaxgateError(
        "USAGE",
        `cannot --write the key of ${userName}: ${target} is not writable (${(err as NodeJS.ErrnoException).code ?? err}); run as its owner (e.g. sudo). No key was created`,
        { cause: err },
      );
    }
  }
  return home;
}

/** Writes `text` over `file` atomically, keeping its mode and (as root) its owner and group. */
async function rewriteKeeping(file: string, text: string): Promise<void> {
  const st = statSync(file);
  await writeFileAtomic(file, text, st.mode & 0o777);
  if (process.getuid?.() === 0) chownSync(file, st.uid, st.gid);
}

/**
 * New key, proven to work; then either it is written where the user's key lives (--write: the
 * config file for a literal key, the secrets file for a ${VAR} key; found and checked writable
 * before the key is created), the running daemon told (SIGHUP) and the old key deleted after a
 * grace period; or the new key is printed with the command that deletes the old one after the
 * switch. A key created and then not written is deleted again: rotation never leaves an orphan.
 */
export async function keysRotate(opts: Opts & { write?: boolean; graceSeconds?: number }): Promise<void> {
  const ctx = loadContext(opts);
  const user = pickUser(ctx, opts.user);
  const home = opts.write ? findKeyHome(ctx, user.name) : null;
  await withClients(ctx, async (c) => {
    const admin = c.admin("`faxgate keys rotate`");
    const plan = await createReplacementKey({
      admin,
      current: c.withKey(user.apiKey, `the key of user ${user.name}`),
      currentToken: user.apiKey,
      clientWithKey: (t) => c.withKey(t),
      userName: user.name,
      now: new Date(),
    });
    const oldId = plan.oldKey?.uuid;
    if (!home) {
      process.stdout.write(
        `new key for ${user.name} (${plan.newKey.uuid}), proven to work:\n${plan.newKey.token}\n\n` +
          `Put it in the config as users[name=${user.name}].apiKey (or its variable in the secrets file), reload the daemon\n` +
          `(systemctl reload faxgate, or kill -HUP), then delete the old key:\n` +
          (oldId
            ? `  faxgate keys delete ${oldId}\n`
            : "  (the old key could not be identified: delete it with `faxgate keys list` / `keys delete`)\n"),
      );
      return;
    }
    try {
      await rewriteKeeping(home.file, home.rewrite(readFileSync(home.file, "utf8"), plan.newKey.token));
    } catch (err) {
      const undone = await admin.deleteApiKey(plan.newKey.uuid).then(
        () => "the new key was deleted again; the old key stays in use",
        (e) =>
          `the new key ${plan.newKey.uuid} could not be deleted again (${describeError(e)}): delete it with \`faxgate keys delete ${plan.newKey.uuid}\``,
      );
      throw new FaxgateError("USAGE", `could not write the new key to ${home.file}: ${describeError(err)}; ${undone}`, {
        cause: err,
      });
    }
    process.stdout.write(`updated ${home.what}: the key of ${user.name} is now key ${plan.newKey.uuid}\n`);
    signalDaemon(ctx.config.data);
    const grace = opts.graceSeconds ?? 10;
    if (oldId) {
      await new Promise((r) => setTimeout(r, grace * 1000));
      await admin.deleteApiKey(oldId);
      process.stdout.write(`deleted the old key ${oldId}\n`);
    }
  });
}

/** Tells the daemon on this data folder to reload (SIGHUP), when one runs. */
export function signalDaemon(dataDir: string): void {
  try {
    const pid = Number(readFileSync(path.join(dataDir, "faxgate.pid"), "utf8").trim());
    if (pid > 0) {
      process.kill(pid, "SIGHUP");
      process.stdout.write(`told the running daemon (pid ${pid}) to reload\n`);
    }
  } catch {
    process.stdout.write("no running daemon found; it will use the new key when started\n");
  }
}

export async function contactsList(opts: Opts & { query?: string; limit?: number }): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const page = await c.forUser(opts.user).listContacts({ query: opts.query, limit: opts.limit ?? 100 });
    if (opts.json) return printJson(page);
    const rows = page.rows.flatMap((r) => [r, ...(r.contacts ?? []).map((m) => ({ ...m, name: `  ${m.name}` }))]);
    printTable(
      ["CONTACT ID", "NAME", "FAX", "EMAIL", "KIND"],
      rows.map((r) => [
        r.uuid,
        r.name,
        // the service keeps "(555) 010-0100"; shown as every surface writes a number
        faxNumber(r.faxNumber, smtpSettings(ctx.config).defaultCountryCode) ?? "",
        r.email,
        r.isOrganization ? "organization" : r.isPublic ? "public" : "",
      ]),
    );
    process.stdout.write(`${page.count} in all\n`);
  });
}

function contactFax(ctx: ReturnType<typeof loadContext>, fax?: string): string | undefined {
  if (fax === undefined) return undefined;
  const n = normalizeFaxNumber(fax, smtpSettings(ctx.config).defaultCountryCode);
  if (!n.ok) throw new FaxgateError("BAD_NUMBER", `--fax: ${n.reason}`);
  return toContactFormat(n.e164);
}

/**
 * Changing contacts takes a key of level base or admin; the users' keys are print_driver keys,
 * which the service lets read contacts only. So the admin key does it, on the user's behalf.
 */
async function contactWriter(c: ApiClients, opts: Opts, command: string): Promise<{ api: FaxApi; userId: string }> {
  const purpose = `\`faxgate ${command}\``;
  if (!c.hasAdminKey) {
    throw new FaxgateError(
      "USAGE",
      `${purpose} needs the admin key (api.adminKey): the users' keys are print_driver keys, which may only read contacts`,
      { field: "api.adminKey" },
    );
  }
  const me = await c.forUser(opts.user).me();
  return { api: c.admin(purpose), userId: me.userId };
}

function explainForbidden(err: unknown, command: string): never {
  if (err instanceof FaxgateError && err.code === "API_FORBIDDEN") {
    throw new FaxgateError(
      "API_FORBIDDEN",
      `\`faxgate ${command}\` was refused by the service (403): api.adminKey must be a key of access level admin`,
      { cause: err, httpStatus: 403 },
    );
  }
  throw err;
}

export async function contactsAdd(
  opts: Opts & {
    name: string;
    fax?: string;
    email?: string;
    phone?: string;
    organization?: boolean;
    public?: boolean;
    org?: string;
  },
): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const { api, userId } = await contactWriter(c, opts, "contacts add");
    const created = await api
      .createContact(
        {
          name: opts.name,
          faxNumber: contactFax(ctx, opts.fax),
          email: opts.email,
          phoneNumber: opts.phone,
          isOrganization: opts.organization,
          isPublic: opts.public,
          organizationId: opts.org,
        },
        userId,
      )
      .catch((err) => explainForbidden(err, "contacts add"));
    if (opts.json) return printJson(created);
    process.stdout.write(`created contact ${created.uuid} ${created.name}\n`);
  });
}

export async function contactsUpdate(
  id: string,
  opts: Opts & { name?: string; fax?: string; email?: string; phone?: string },
): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const { api } = await contactWriter(c, opts, "contacts update");
    const updated = await api
      .updateContact(id, {
        name: opts.name,
        faxNumber: contactFax(ctx, opts.fax),
        email: opts.email,
        phoneNumber: opts.phone,
      })
      .catch((err) => explainForbidden(err, "contacts update"));
    if (opts.json) return printJson(updated);
    process.stdout.write(`updated contact ${updated.uuid} ${updated.name}\n`);
  });
}

export async function contactsDelete(ids: string[], opts: Opts): Promise<void> {
  const ctx = loadContext(opts);
  await withClients(ctx, async (c) => {
    const { api } = await contactWriter(c, opts, "contacts delete");
    await (ids.length === 1 ? api.deleteContact(ids[0]!) : api.deleteContacts(ids)).catch((err) =>
      explainForbidden(err, "contacts delete"),
    );
    process.stdout.write(`deleted ${ids.length} contact${ids.length === 1 ? "" : "s"}\n`);
  });
}

export async function historyCommand(
  opts: Opts & {
    direction?: string;
    status?: string;
    from?: string;
    to?: string;
    query?: string;
    limit?: number;
    offset?: number;
    all?: boolean;
    archived?: boolean;
  },
): Promise<void> {
  const ctx = loadContext(opts);
  const q: HistoryQuery = {
    direction: opts.direction as HistoryQuery["direction"],
    status: opts.status as HistoryQuery["status"],
    fromDate: opts.from,
    toDate: opts.to,
    query: opts.query,
    limit: opts.limit ?? 50,
    offset: opts.offset,
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
      ["MESSAGE ID", "DIRECTION", "STATUS", "NUMBER", "PAGES", "CREATED", "RESULT"],
      rows.map((r) => [
        r.messageId,
        r.direction,
        r.status,
        r.faxNumber ? formatFaxNumber(r.faxNumber) : "",
        r.pagesCount,
        r.createdAt,
        r.errorInfo ?? r.resultInfo,
      ]),
    );
    process.stdout.write(`${rows.length} shown of ${count}\n`);
  });
}

/**
 * `faxgate download ID`: a job id saves the fax of each recipient the service has a message for
 * (with that job's user's key); anything else is taken for the service's message id.
 */
export async function downloadCommand(id: string, opts: Opts & { output?: string }): Promise<void> {
  const ctx = loadContext(opts);
  const job = existsSync(ctx.config.data) ? await withStore(ctx, (store) => store.getJob(id)) : null;
  await withClients(ctx, async (c) => {
    if (!job) {
      const dest = path.resolve(opts.output ?? `${id}.pdf`);
      const r = await c.forUser(opts.user).downloadFax(id, dest);
      process.stdout.write(`${dest} (${r.bytes} bytes)\n`);
      return;
    }
    const sent = job.recipients.filter((r) => r.messageId);
    if (sent.length === 0)
      throw new FaxgateError(
        "USAGE",
        `job ${job.id} has no fax at the service yet (state ${job.state}): nothing to download`,
      );
    const api = c.forUser(opts.user ?? job.user);
    for (const r of sent) {
      const name = sent.length === 1 ? `${job.id}.pdf` : `${job.id}-${r.number.replace(/^\+/, "")}.pdf`;
      const dest = path.resolve(
        opts.output && sent.length === 1 ? opts.output : opts.output ? path.join(opts.output, name) : name,
      );
      const got = await api.downloadFax(r.messageId!, dest);
      process.stdout.write(`${dest} (${got.bytes} bytes, ${r.number}, message ${r.messageId})\n`);
    }
  });
}
