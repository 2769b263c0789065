// pino, the only logger. Components get child loggers (`component`, and `job` for job lines).
// Secrets are redacted by path here and never put into messages by the code that logs.
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';

export type { Logger };

/** Paths pino censors wherever they appear in a log object. */
export const REDACT_PATHS = [
  'apiKey', '*.apiKey', '*.*.apiKey',
  'adminKey', '*.adminKey', '*.*.adminKey',
  'password', '*.password', '*.*.password',
  'token', '*.token', '*.*.token',
  'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
  'Authorization', '*.Authorization', 'headers.Authorization', '*.headers.Authorization',
  'pass', '*.pass', 'auth.pass', '*.auth.pass',
];

export interface LogOptions {
  level?: string;
  /** json: one JSON object per line; pretty: for a terminal; auto: pretty when stdout is a TTY */
  format?: 'json' | 'pretty' | 'auto';
  /** Where lines go (tests pass a stream to capture them); default stdout. */
  destination?: DestinationStream;
  name?: string;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const options: LoggerOptions = {
    name: opts.name ?? 'faxgate',
    level: opts.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (opts.destination) return pino(options, opts.destination);
  const pretty = opts.format === 'pretty' || (opts.format !== 'json' && process.stdout.isTTY === true);
  if (pretty) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:standard', ignore: 'pid,hostname' } } });
  }
  return pino(options);
}

/** A logger that drops everything (tests and tools that do not care). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
