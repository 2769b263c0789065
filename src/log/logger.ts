// pino, the only logger. Components get child loggers (`component`, and `job` for job lines).
// Secrets are redacted by path here and never put into messages by the code that logs.
import { pino, type Logger, type LoggerOptions, type DestinationStream } from "pino";

export type { Logger };

/** Paths pino censors wherever they appear in a log object. */
export const REDACT_PATHS = [
  "apiKey",
  "*.apiKey",
  "*.*.apiKey",
  "adminKey",
  "*.adminKey",
  "*.*.adminKey",
  "password",
  "*.password",
  "*.*.password",
  "token",
  "*.token",
  "*.*.token",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "Authorization",
  "*.Authorization",
  "headers.Authorization",
  "*.headers.Authorization",
  "pass",
  "*.pass",
  "auth.pass",
  "*.auth.pass",
];

export interface LogOptions {
  level?: string;
  /** json: one JSON object per line; pretty: for a terminal; auto: pretty when stdout is a TTY */
  format?: "json" | "pretty" | "auto";
  /** Where lines go (tests pass a stream to capture them); default stdout. */
  destination?: DestinationStream;
  name?: string;
}

function baseOptions(name: string, level: string): LoggerOptions {
  return {
    name,
    level,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
}

/**
 * FAXGATE_LOG_COPY=FILE appends a copy of every log line (also of loggers that are otherwise
 * silent) to FILE. The test suite sets it and afterwards checks the file for secrets.
 */
function copyStream(): DestinationStream | null {
  const file = process.env.FAXGATE_LOG_COPY;
  return file ? pino.destination({ dest: file, append: true, sync: true, mkdir: true }) : null;
}

function withCopy(main: DestinationStream): DestinationStream {
  const copy = copyStream();
  return copy
    ? pino.multistream([
        { stream: main, level: "trace" },
        { stream: copy, level: "trace" },
      ])
    : main;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const options = baseOptions(opts.name ?? "faxgate", opts.level ?? "info");
  if (opts.destination) return pino(options, withCopy(opts.destination));
  const pretty = opts.format === "pretty" || (opts.format !== "json" && process.stdout.isTTY === true);
  if (pretty) {
    return pino({
      ...options,
      transport: {
        target: "pino-pretty",
        options: { colorize: true, translateTime: "SYS:standard", ignore: "pid,hostname" },
      },
    });
  }
  return pino(options, withCopy(pino.destination({ dest: 1, sync: true })));
}

/** A logger that drops everything (tests and tools that do not care), except into FAXGATE_LOG_COPY. */
export function silentLogger(): Logger {
  const copy = copyStream();
  return copy ? pino(baseOptions("faxgate", "debug"), copy) : pino({ level: "silent" });
}
