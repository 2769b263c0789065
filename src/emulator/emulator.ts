// The fax service emulator: an HTTPS implementation of the cloud fax service API (both documented
// variants) with state in SQLite, real PDF documents, lifecycle rules by destination number and
// switchable faults. Used as the sandbox for new users and as the test bed.
import { chmod, mkdir, open, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { systemClock, type Clock } from "../clock.js";
import type { AccessLevel, ApiVariant } from "./types.js";
import { silentLogger, type Logger } from "../log/index.js";
import { ensureCertificate } from "./certificate.js";
import { AccountRate, applyBehaviour, DEFAULT_BEHAVIOUR, HistoryBudget, type Behaviour } from "./behaviour.js";
import type { EmulatorContext } from "./context.js";
import { openDb, type KeyRow } from "./db.js";
import { Faults } from "./faults.js";
import { applySeed, loadSeedFile, type SeedData } from "./seed.js";
import { buildServer } from "./server.js";
import { Webhooks } from "./webhooks.js";

export type { SeedData, SeedUser, SeedKey, SeedContact, SeedTag } from "./seed.js";
export type { FaultSettings } from "./faults.js";
export type { Behaviour } from "./behaviour.js";
export { DEFAULT_BEHAVIOUR } from "./behaviour.js";
export { ENDINGS, RESULTS } from "./results.js";
export { RETRY_SCHEDULE_S, WEBHOOK_EVENTS } from "./webhooks.js";

export interface EmulatorOptions {
  dataDir: string;
  /** default 127.0.0.1 */
  host?: string;
  /** default 0 (any free port) */
  port?: number;
  /** seed data, or the path of a JSON or YAML seed file */
  seed?: SeedData | string;
  /** which documented response shapes to use; default 'a' */
  variant?: ApiVariant;
  /** how long a new fax stays "processing"; default 2000 */
  delayMs?: number;
  logger?: Logger;
  clock?: Clock;
  /** seed of the fault PRNG, for repeatable fault runs */
  faultSeed?: number;
  /** largest accepted upload per file (default 100 MiB); bigger gets 413 */
  maxFileBytes?: number;
  /** history `offset` counts pages (default) or records */
  offsetMode?: Behaviour["offsetMode"];
  /** custom fields on records: kept (default), dropped or empty */
  cfMode?: Behaviour["cfMode"];
  /** per-recipient error shape: input (default) or recipientFax */
  recipientErrorShape?: Behaviour["recipientErrorShape"];
  /** fax history calls per account per minute; default 8, 0 = unlimited */
  historyPerMinute?: number;
  /** whether a history 429 carries Retry-After; default false */
  historyRetryAfter?: boolean;
  /** API calls per account within any one second; default 0 = unlimited */
  ratePerSecond?: number;
  /** multiplies the webhook retry schedule; default 1 */
  webhookRetryScale?: number;
  /** who fax info's `users` names: the owner (default) or everyone who can see the fax */
  infoUsers?: Behaviour["infoUsers"];
  /** extra CA (PEM text) trusted for https webhook URLs */
  webhookCa?: string;
  /** accept any certificate from https webhook URLs: for tests only */
  webhookInsecure?: boolean;
}

/** The behaviour switches named in the options, over the defaults (refused by name when invalid). */
export function behaviourFromOptions(opts: EmulatorOptions): Behaviour {
  const given: Record<string, unknown> = {};
  for (const k of Object.keys(DEFAULT_BEHAVIOUR) as Array<keyof Behaviour>)
    if (opts[k] !== undefined) given[k] = opts[k];
  return applyBehaviour({ ...DEFAULT_BEHAVIOUR }, given);
}

export interface RunningEmulator {
  baseUrl: string;
  /** the self-signed certificate (PEM file) clients trust as a CA */
  caFile: string;
  caPem: string;
  /** a token with admin access */
  adminKey: string;
  keys: Array<{ email: string; access: AccessLevel; token: string; userId: string }>;
  accountId: string;
  variant: ApiVariant;
  /** the current behaviour switches (a copy) */
  behaviour(): Behaviour;
  close(): Promise<void>;
}

export async function startEmulator(opts: EmulatorOptions): Promise<RunningEmulator> {
  const behaviour = behaviourFromOptions(opts);
  const dataDir = path.resolve(opts.dataDir);
  const { faxDir, uploadDir } = await prepareFolders(dataDir);
  const logger = opts.logger ?? silentLogger();
  const clock = opts.clock ?? systemClock;
  const tls = await ensureCertificate(dataDir);
  const seed = typeof opts.seed === "string" ? await loadSeedFile(opts.seed) : opts.seed;
  const db = await openOwnDb(dataDir);
  let app: Awaited<ReturnType<typeof buildServer>> | undefined;
  let webhooks: Webhooks | undefined;
  try {
    const accountId = applySeed(db, seed, clock.now());
    const variant = opts.variant ?? "a";
    const ctx: EmulatorContext = {
      db,
      dataDir,
      faxDir,
      uploadDir,
      variant,
      delayMs: opts.delayMs ?? 2000,
      clock,
      logger,
      faults: new Faults(opts.faultSeed),
      accountId,
      behaviour,
      historyBudget: new HistoryBudget(),
      accountRate: new AccountRate(),
      webhooks: new Webhooks(db, clock, logger, () => ctx.behaviour, {
        ca: opts.webhookCa,
        insecure: opts.webhookInsecure,
      }),
    };
    webhooks = ctx.webhooks;
    app = await buildServer(ctx, tls, opts.maxFileBytes);
    const host = opts.host ?? "127.0.0.1";
    await app.listen({ host, port: opts.port ?? 0 });
    const addr = app.server.address() as AddressInfo;
    const urlHost = addr.address.includes(":") ? `[${addr.address}]` : addr.address;
    const baseUrl = `https://${urlHost}:${addr.port}`;

    const live = liveKeys(db, accountId, clock.now());
    const adminKey = live.find((k) => k.access === "admin")?.token ?? "";
    ctx.webhooks.start();
    logger.info({ baseUrl, variant, delayMs: ctx.delayMs, behaviour }, "emulator listening");
    const server = app;
    let closed = false;
    return {
      baseUrl,
      caFile: tls.caFile,
      caPem: tls.cert,
      adminKey,
      keys: live.map((k) => ({ email: k.email, access: k.access, token: k.token, userId: k.userId })),
      accountId,
      variant,
      behaviour: () => ({ ...ctx.behaviour }),
      async close() {
        if (closed) return;
        closed = true;
        await server.close();
        await ctx.webhooks.stop();
        db.close();
      },
    };
  } catch (err) {
    await app?.close().catch(() => undefined);
    await webhooks?.stop();
    db.close();
    throw err;
  }
}

/** The data folder, its documents and a fresh uploads folder, owner only. */
async function prepareFolders(dataDir: string): Promise<{ faxDir: string; uploadDir: string }> {
  const faxDir = path.join(dataDir, "faxes");
  const uploadDir = path.join(dataDir, "uploads");
  // the database holds every key and the folders every document: owner only
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700);
  await mkdir(faxDir, { recursive: true, mode: 0o700 });
  await chmod(faxDir, 0o700);
  // uploads left by a crash are of no use: their requests never got an answer
  await rm(uploadDir, { recursive: true, force: true });
  await mkdir(uploadDir, { recursive: true, mode: 0o700 });
  return { faxDir, uploadDir };
}

/** The emulator's database in `dataDir`, its file readable by the owner only. */
async function openOwnDb(dataDir: string): Promise<ReturnType<typeof openDb>> {
  const dbFile = path.join(dataDir, "emulator.sqlite");
  // made 0600 before SQLite opens it; SQLite gives its -wal and -shm files the same mode
  await (await open(dbFile, "a", 0o600)).close();
  await chmod(dbFile, 0o600);
  return openDb(dbFile);
}

/** The account's keys not expired at `now`, oldest first, with their users' e-mail. */
function liveKeys(db: ReturnType<typeof openDb>, accountId: string, now: number): Array<KeyRow & { email: string }> {
  const rows = db
    .prepare(
      "SELECT k.*, u.email AS email FROM api_keys k JOIN users u ON u.uuid = k.userId WHERE k.accountId = ? ORDER BY k.createdAt, k.rowid",
    )
    .all(accountId) as Array<KeyRow & { email: string }>;
  return rows.filter((k) => k.expiresAt === null || k.expiresAt > now);
}
