// `faxgate emulator`: the emulator as a standalone process. One JSON line on stdout says where it
// listens and which keys exist (so scripts can read it); everything else is logged to stderr.
import type { Command } from "commander";
import { parseHostPort } from "../config/host-port.js";
import { FaxgateError } from "../errors.js";
import { applyBehaviour, DEFAULT_BEHAVIOUR, type Behaviour } from "../emulator/behaviour.js";

export function parseListen(value: string): { host: string; port: number } {
  return parseHostPort(value, "--listen", "USAGE");
}

interface EmulatorFlags {
  listen: string;
  data: string;
  seed?: string;
  variant: string;
  delayMs: string;
  offsetMode?: string;
  cfMode?: string;
  recipientErrors?: string;
  historyPerMinute?: string;
  historyRetryAfter?: boolean;
  ratePerSecond?: string;
  webhookRetryScale?: string;
  infoUsers?: string;
}

const FLAG_OF: Record<keyof Behaviour, string> = {
  offsetMode: "--offset-mode",
  cfMode: "--cf-mode",
  recipientErrorShape: "--recipient-errors",
  historyPerMinute: "--history-per-minute",
  historyRetryAfter: "--history-retry-after",
  ratePerSecond: "--rate-per-second",
  webhookRetryScale: "--webhook-retry-scale",
  infoUsers: "--info-users",
};

/** The behaviour switches given as flags, checked by the same rules as PUT /_emulator/behaviour. */
export function behaviourFlags(o: Omit<EmulatorFlags, "listen" | "data" | "variant" | "delayMs">): Partial<Behaviour> {
  const given: Record<string, unknown> = {};
  if (o.offsetMode !== undefined) given.offsetMode = o.offsetMode;
  if (o.cfMode !== undefined) given.cfMode = o.cfMode;
  if (o.recipientErrors !== undefined) given.recipientErrorShape = o.recipientErrors;
  if (o.historyPerMinute !== undefined) given.historyPerMinute = o.historyPerMinute;
  if (o.historyRetryAfter) given.historyRetryAfter = true;
  if (o.ratePerSecond !== undefined) given.ratePerSecond = o.ratePerSecond;
  if (o.webhookRetryScale !== undefined) given.webhookRetryScale = o.webhookRetryScale;
  if (o.infoUsers !== undefined) given.infoUsers = o.infoUsers;
  const out: Partial<Behaviour> = {};
  for (const [k, v] of Object.entries(given)) {
    try {
      Object.assign(out, { [k]: applyBehaviour({ ...DEFAULT_BEHAVIOUR }, { [k]: v })[k as keyof Behaviour] });
    } catch (err) {
      const flag = FLAG_OF[k as keyof Behaviour];
      throw new FaxgateError("USAGE", `${flag}: ${(err as Error).message.replace(/^\w+ /, "")}`);
    }
  }
  return out;
}

export function registerEmulatorCommand(program: Command): void {
  program
    .command("emulator")
    .description("run the fax service emulator (HTTPS, self-signed certificate in the data folder)")
    .option("--listen <host:port>", "address to listen on", "127.0.0.1:8443")
    .option("--data <dir>", "data folder (database, documents, certificate)", "./emulator-data")
    .option("--seed <file>", "seed file (JSON or YAML): account, users, keys, contacts")
    .option("--variant <a|b>", "the API's response variant (a or b)", "a")
    .option("--delay-ms <n>", "how long a new fax stays processing, then transmitting (half each)", "2000")
    .option("--offset-mode <pages|records>", "fax history offset counts pages (default) or records")
    .option("--cf-mode <kept|dropped|empty>", "custom fields on records: kept as sent (default), dropped, or {}")
    .option(
      "--recipient-errors <input|recipientFax>",
      "per-recipient error shape in send-to-many and resend (default input)",
    )
    .option("--history-per-minute <n>", "fax history calls allowed per account per minute, 0 = unlimited (default 8)")
    .option("--rate-per-second <n>", "API calls allowed per account within any second, 0 = unlimited (default 0)")
    .option("--history-retry-after", "send Retry-After with a fax history 429 (default: not sent)")
    .option("--webhook-retry-scale <x>", "multiply the webhook retry schedule 5s..22h (default 1)")
    .option("--info-users <who>", "who fax info's users names: owner|viewers (default owner)")
    .action(async (o: EmulatorFlags) => {
      if (o.variant !== "a" && o.variant !== "b")
        throw new FaxgateError("USAGE", `--variant must be a or b, got "${o.variant}"`);
      const delayMs = Number(o.delayMs);
      if (!Number.isInteger(delayMs) || delayMs < 0)
        throw new FaxgateError("USAGE", `--delay-ms must be a whole number >= 0, got "${o.delayMs}"`);
      const { host, port } = parseListen(o.listen);
      const behaviour = behaviourFlags(o);
      // loaded here, not at the top: every other faxgate command would pay for the logger's and
      // the server's start-up
      const { childLog, createLogger } = await import("../log/logger.js");
      const logger = childLog(createLogger({ format: "json", destination: process.stderr as never }), {
        component: "emulator",
      });
      const { startEmulator } = await import("../emulator/emulator.js");
      const emu = await startEmulator({
        dataDir: o.data,
        host,
        port,
        seed: o.seed,
        variant: o.variant,
        delayMs,
        logger,
        ...behaviour,
      });
      process.stdout.write(
        `${JSON.stringify({
          event: "listening",
          baseUrl: emu.baseUrl,
          caFile: emu.caFile,
          adminKey: emu.adminKey,
          keys: emu.keys.map((k) => ({ email: k.email, access: k.access, token: k.token })),
        })}\n`,
      );
      await new Promise<void>((resolve) => {
        let stopping = false;
        const stop = (signal: string) => {
          if (stopping) process.exit(1); // a second signal forces
          stopping = true;
          logger.info({ signal }, "emulator stopping");
          emu.close().then(resolve, (err: unknown) => {
            logger.error({ err }, "emulator close failed");
            resolve();
          });
        };
        process.on("SIGINT", () => stop("SIGINT"));
        process.on("SIGTERM", () => stop("SIGTERM"));
      });
    });
}
