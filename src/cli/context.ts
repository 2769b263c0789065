// What every command needs: the config (file, $FAXGATE_CONFIG, or the built-in sandbox), the store,
// and API clients. Commands that talk to the store work while the daemon runs (SQLite WAL).
import { existsSync } from "node:fs";
import { loadConfigFileDetailed, unsetSecretName, type UnsetSecret } from "../config/load.js";
import type { OldKeyUse } from "../config/old-keys.js";
import type { Config, UserConfig } from "../config/schema.js";
import { FaxgateError } from "../errors.js";
import type { ApiGate } from "../fax/api-gate.js";
import type { FaxClient } from "../fax/client.js";
import type { FaxClientFactory } from "../fax/client-factory.js";
import type { FaxApi } from "../fax/types.js";
import { effectiveUsers } from "../keys/key-overrides.js";
import { readSandboxFile, sandboxConfig } from "../sandbox.js";
import type { QueueStore } from "../store/queue-store.js";

// The store and the HTTP client are loaded by the commands that use them (`faxgate jobs` needs no
// HTTP client, `faxgate contacts` no database): a command's start-up pays only for its own parts.
const openQueue: typeof import("../store/open.js").openStore = async (o) =>
  (await import("../store/open.js")).openStore(o);

export interface GlobalOptions {
  config?: string;
  json?: boolean;
}

export interface CliContext {
  config: Config;
  configFile: string | null;
  sandbox: boolean;
  /** secrets whose variables are not set: a command fails only when it needs one of them */
  unset: UnsetSecret[];
  secretsFile: string | null;
  secretsProblem?: string;
  /** keys of older releases the file uses (`config check` and `start` say what to write instead) */
  oldKeys: OldKeyUse[];
}

export function resolveConfigFile(opt?: string): string | null {
  return opt ?? process.env.FAXGATE_CONFIG ?? null;
}

/**
 * The config of a command. Secrets are needed only by the commands that use them (see
 * `needSecret`); `strict` (start, config check) refuses the config when any is unset.
 */
export function loadContext(opts: GlobalOptions, strict = false): CliContext {
  const file = resolveConfigFile(opts.config);
  if (file) {
    const loaded = loadConfigFileDetailed(file, { lenientSecrets: !strict });
    return {
      config: loaded.config,
      configFile: file,
      sandbox: loaded.config.api.baseUrl === "sandbox",
      unset: loaded.unset,
      secretsFile: loaded.secretsFile,
      secretsProblem: loaded.secretsProblem,
      oldKeys: loaded.oldKeys,
    };
  }
  return { config: sandboxConfig(), configFile: null, sandbox: true, unset: [], secretsFile: null, oldKeys: [] };
}

/** Where an unset secret may be set, for error messages. */
export function whereToSetSecrets(ctx: CliContext): string {
  const file = ctx.secretsFile
    ? `the environment or the secrets file ${ctx.secretsFile}${ctx.secretsProblem ? ` (${ctx.secretsProblem})` : ""}`
    : "the environment, or in a secrets file named by the config key secretsFile";
  return file;
}

/** Throws, naming the variable and the key, when `value` is a secret left unset by a lenient load. */
export function needSecret(ctx: CliContext, value: string | undefined, purpose: string): void {
  const name = unsetSecretName(value);
  if (!name) return;
  const entry = ctx.unset.find((u) => u.name === name);
  throw new FaxgateError(
    "USAGE",
    `${purpose} needs ${name}${entry ? ` (${entry.key})` : ""}, which is not set: set it in ${whereToSetSecrets(ctx)}`,
    { field: entry?.key },
  );
}

export async function openStore(ctx: CliContext): Promise<QueueStore> {
  // PostgreSQL: the queue is the database, reachable from any host (data holds only cached copies)
  if (ctx.config.database) return openQueue({ dataDir: ctx.config.data, database: ctx.config.database });
  if (!existsSync(ctx.config.data)) {
    throw new FaxgateError(
      "STORE_UNAVAILABLE",
      `no queue at ${ctx.config.data} (has the gateway been started with this config?)`,
    );
  }
  return openQueue({ dataDir: ctx.config.data });
}

/** Opens the store for one command and closes it whatever happens. */
export async function withStore<T>(ctx: CliContext, fn: (store: QueueStore) => T | Promise<T>): Promise<T> {
  const store = await openStore(ctx);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Base URL, CA and admin key of the service this config talks to (the sandbox's from its data folder). */
export function serviceOf(ctx: CliContext): { baseUrl: string; caFile?: string; adminKey?: string } {
  if (ctx.config.api.baseUrl === "sandbox") {
    const sb = readSandboxFile(ctx.config.data);
    if (!sb)
      throw new FaxgateError(
        "API_NETWORK",
        "the sandbox fax service is not running: start it with `faxgate start` first",
        { field: "api.baseUrl" },
      );
    return sb;
  }
  return { baseUrl: ctx.config.api.baseUrl, caFile: ctx.config.api.caFile, adminKey: ctx.config.api.adminKey };
}

export function pickUser(ctx: CliContext, name?: string): UserConfig {
  const users = effectiveUsers(ctx.config.users, ctx.config.data);
  if (users.length === 0)
    throw new FaxgateError("USAGE", "no users are configured (config key: users)", { field: "users" });
  if (!name) return users[0]!;
  const u = users.find((x) => x.name === name || x.email.toLowerCase() === name.toLowerCase());
  if (!u)
    throw new FaxgateError("USAGE", `no configured user "${name}" (known: ${users.map((x) => x.name).join(", ")})`, {
      field: "users",
    });
  return u;
}

export class ApiClients {
  private readonly factory: FaxClientFactory;
  readonly service;

  constructor(
    private readonly ctx: CliContext,
    Factory: typeof FaxClientFactory,
    /** The account's budget the command's calls pass (cli/api-budget.ts). */
    gate?: ApiGate,
  ) {
    this.service = serviceOf(ctx);
    this.factory = new Factory({
      baseUrl: this.service.baseUrl,
      caFile: this.service.caFile,
      api: ctx.config.api,
      ...(gate ? { gate } : {}),
    });
  }

  /** The fax account of this config's keys, asked outside the gate (the gate's budget is the account's). */
  async accountId(Client: typeof FaxClient): Promise<string> {
    const users = effectiveUsers(this.ctx.config.users, this.ctx.config.data);
    const key = [this.service.adminKey, ...users.map((u) => u.apiKey)].find((k) => k && !unsetSecretName(k));
    if (!key) throw new FaxgateError("USAGE", "no API key is set to learn the fax account by (api.adminKey, users)");
    const client = new Client({
      baseUrl: this.service.baseUrl,
      apiKey: key,
      variant: this.ctx.config.api.variant,
      dispatcher: this.factory.agent,
      timeoutMs: this.ctx.config.api.timeoutMs,
    });
    return (await client.me()).accountId;
  }

  withKey(token: string, purpose = "this command"): FaxApi {
    // a minted key is sealed in the store with a key only the daemon is given a reason to use
    if (token === "")
      throw new FaxgateError(
        "USAGE",
        `${purpose} is minted by the gateway and kept sealed in its store (directory.keys): a command cannot use it; the key watch rotates it before it expires`,
      );
    needSecret(this.ctx, token, purpose);
    return this.factory.withKey(token);
  }

  forUser(name?: string): FaxApi {
    const user = pickUser(this.ctx, name);
    return this.withKey(user.apiKey, `the key of user ${user.name}`);
  }

  get hasAdminKey(): boolean {
    return this.service.adminKey !== undefined;
  }

  /** The admin key's client; `purpose` says which command needs it, for the error without one. */
  admin(purpose = "this command"): FaxApi {
    if (!this.service.adminKey)
      throw new FaxgateError(
        "USAGE",
        `${purpose} needs the admin key: set api.adminKey in the config (an admin-level key of the fax service)`,
        { field: "api.adminKey" },
      );
    return this.withKey(this.service.adminKey, purpose);
  }

  async close(): Promise<void> {
    await this.factory.close();
  }
}

/**
 * Runs `fn` with API clients whose calls take their slots from the account's budget: the fleet's
 * on PostgreSQL, shared with the gateways (docs/ha.md), else the command's own gate.
 */
export async function withClients<T>(ctx: CliContext, fn: (c: ApiClients) => Promise<T>): Promise<T> {
  const [{ FaxClientFactory }, { FaxClient }, { cliBudget }] = await Promise.all([
    import("../fax/client-factory.js"),
    import("../fax/client.js"),
    import("./api-budget.js"),
  ]);
  let clients: ApiClients | null = null;
  const budget = await cliBudget({
    config: ctx.config,
    openStore: () => (ctx.config.database ? openStore(ctx) : null),
    askAccount: () => clients!.accountId(FaxClient),
  });
  try {
    clients = new ApiClients(ctx, FaxClientFactory, budget.gate);
    try {
      return await fn(clients);
    } finally {
      await clients.close();
    }
  } finally {
    await budget.close();
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A plain text table for terminals. */
export function printTable(headers: string[], rows: Array<Array<string | number | null | undefined>>): void {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? "" : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  process.stdout.write(`${line(headers)}\n${cells.map(line).join("\n")}${cells.length ? "\n" : ""}`);
}
