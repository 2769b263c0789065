// `faxgate start`: the daemon. Signals: SIGTERM/SIGINT stop in order (a second one forces),
// SIGHUP reloads users and keys from the config file (and its secretsFile) without dropping connections.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { loadConfigFileDetailed } from "../config/load.js";
import { describeOldKey, type OldKeyUse } from "../config/old-keys.js";
import { adminWithListen, webWithListen } from "../config/schema.js";
import { describeError } from "../errors.js";
import { createLogger } from "../log/logger.js";
import { Gateway, type RunningAddresses, type ServiceEndpoint } from "../main.js";
import { lockDataFolder } from "../parts/data-folder.js";
import { sandboxBanner, startEmbeddedService, writeSampleDocument } from "../sandbox.js";
import { loadContext, type GlobalOptions } from "./context.js";

export interface StartOptions extends GlobalOptions {
  /** sandbox only: the emulator's processing delay */
  delayMs?: number;
  /** override smtp.listen (e.g. when 2525 is taken, or port 0 in tests) */
  smtpListen?: string[];
  /** override admin.listen */
  adminListen?: string;
  /** override web.listen */
  webListen?: string;
}

type Config = ReturnType<typeof loadContext>["config"];
type Logger = ReturnType<typeof createLogger>;

export async function startCommand(opts: StartOptions): Promise<void> {
  // Strict: the daemon needs every secret, and names every unset one at once.
  const ctx = loadContext(opts, true);
  const config = withListenOverrides(ctx.config, opts);
  const logger = createLogger({ level: config.log.level, format: config.log.format });
  const warnOldKeys = (uses: OldKeyUse[]) => {
    for (const use of uses) logger.warn({ key: use.old, now: use.now, value: use.value }, describeOldKey(use));
  };
  warnOldKeys(ctx.oldKeys);
  // Taken from the first moment: a SIGHUP (a `systemctl reload`) while the daemon starts would
  // otherwise end it (the default action); it is applied once the gateway has started.
  let reloadOnceStarted: (() => void) | null = null;
  let hangups = 0;
  process.on("SIGHUP", () => {
    if (reloadOnceStarted) reloadOnceStarted();
    else hangups += 1;
  });
  const { gateway, emulator, service } = await openGateway(config, logger, {
    delayMs: opts.delayMs,
    reloadConfig: ctx.configFile
      ? () => {
          const loaded = loadConfigFileDetailed(ctx.configFile!);
          warnOldKeys(loaded.oldKeys);
          return loaded.config;
        }
      : undefined,
  });
  let addresses: Awaited<ReturnType<typeof gateway.start>>;
  try {
    addresses = await gateway.start();
  } catch (err) {
    logger.fatal({ err: describeError(err) }, "could not start");
    await gateway.stop(5000);
    await emulator?.close();
    throw err;
  }
  const pidFile = path.join(config.data, "faxgate.pid");
  writeFileSync(pidFile, `${process.pid}\n`);
  if (ctx.sandbox) await announceSandbox(config, ctx.configFile, addresses, service, logger);
  logStrayRejections(logger);
  stopOnSignals(logger, gateway, emulator, pidFile);
  reloadOnceStarted = () => {
    logger.info("SIGHUP: reloading users");
    void gateway.reload();
  };
  if (hangups > 0) reloadOnceStarted();
}

/** The config with the command line's --smtp-listen, --admin-listen and --web-listen over it. */
function withListenOverrides(loaded: Config, opts: StartOptions): Config {
  const config = { ...loaded };
  if (opts.smtpListen?.length && config.smtp) config.smtp = { ...config.smtp, listen: opts.smtpListen };
  if (opts.adminListen) config.admin = adminWithListen(config.admin, opts.adminListen);
  if (opts.webListen) config.web = webWithListen(config.web, opts.webListen);
  return config;
}

/** The data folder locked, the service (the embedded emulator in sandbox mode) and the gateway opened. */
async function openGateway(
  config: Config,
  logger: Logger,
  opts: { delayMs?: number; reloadConfig?: () => Config },
): Promise<{ gateway: Gateway; emulator: { close(): Promise<void> } | null; service: ServiceEndpoint }> {
  // First of all, before a sandbox rewrites data/sandbox.json: is another daemon on this folder?
  const lock = lockDataFolder(config.data);
  let emulator: { close(): Promise<void> } | null = null;
  try {
    let service: ServiceEndpoint;
    if (config.api.baseUrl === "sandbox") {
      const embedded = await startEmbeddedService(config, logger, opts.delayMs);
      emulator = embedded.emulator;
      service = embedded.service;
    } else {
      service = { baseUrl: config.api.baseUrl, caFile: config.api.caFile, adminKey: config.api.adminKey };
    }
    const gateway = await Gateway.open(config, { service, logger, lock, reloadConfig: opts.reloadConfig });
    return { gateway, emulator, service };
  } catch (err) {
    await emulator?.close();
    lock.release();
    throw err;
  }
}

/** Sandbox mode said out loud: the banner when there is no config file, a loud warning when one asks for it. */
async function announceSandbox(
  config: Config,
  configFile: string | null,
  addresses: RunningAddresses,
  service: ServiceEndpoint,
  logger: Logger,
): Promise<void> {
  if (!configFile) {
    const sample = await writeSampleDocument(config.data).catch((err) => {
      logger.warn({ err: describeError(err) }, "could not write the sample document");
      return undefined;
    });
    process.stderr.write(`${sandboxBanner(addresses, service.baseUrl, sample)}\n`);
    return;
  }
  // Said explicitly in a config file: fine for a trial, never for production; say so loudly.
  const line = "*".repeat(78);
  process.stderr.write(
    `${line}\n*  SANDBOX: api.baseUrl is "sandbox" in ${configFile}.\n*  Faxes go to the embedded emulator at ${service.baseUrl} and are NEVER sent to a real fax line.\n*  Set api.baseUrl to your fax service's https:// URL to send real faxes.\n${line}\n`,
  );
  logger.warn(
    { config: configFile, baseUrl: service.baseUrl },
    'SANDBOX: api.baseUrl is "sandbox"; no fax leaves this machine',
  );
}

/**
 * A stray rejection is a bug, but one hostile mail must not take every session down with it:
 * log it loudly and keep serving (everything accepted is on disk either way).
 */
function logStrayRejections(logger: Logger): void {
  process.on("unhandledRejection", (reason) => {
    // where it came from (the frames only: a message may quote input)
    const at =
      reason instanceof Error
        ? reason.stack
            ?.split("\n")
            .slice(1, 6)
            .map((l) => l.trim())
            .join(" | ")
        : undefined;
    logger.error({ err: describeError(reason), at }, "BUG: unhandled promise rejection (the gateway keeps running)");
  });
}

/** SIGTERM/SIGINT stop the gateway in order and remove the pid file; a second signal exits at once. */
function stopOnSignals(
  logger: Logger,
  gateway: Gateway,
  emulator: { close(): Promise<void> } | null,
  pidFile: string,
): void {
  let signals = 0;
  const shutdown = (sig: string) => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal: sig }, "second signal: exiting now");
      process.exit(130);
    }
    logger.info({ signal: sig }, "shutdown requested");
    void (async () => {
      try {
        await gateway.stop(20_000);
        await emulator?.close();
      } catch (err) {
        logger.error({ err: describeError(err) }, "error while stopping");
      }
      try {
        rmSync(pidFile, { force: true });
      } catch (err) {
        // a data folder gone read-only (or away) must not keep the daemon from exiting
        logger.warn({ err: describeError(err) }, "could not remove the pid file");
      }
      logger.flush?.();
      process.exit(0);
    })();
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}
