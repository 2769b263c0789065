// pino, the only logger. Components get child loggers (`component`, and `job` for job lines).
// Secrets are redacted by path here and never put into messages by the code that logs. Fax
// numbers are cut to their last four digits by path too: a log is read by whoever runs the host,
// and who faxed which practice is the office's to keep (the ledger keeps a keyed hash, the console
// the number).
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

/** Fields that carry a fax number, or an address made of one (`15551234567@fax.example.com`). */
const NUMBER_KEYS = ["to", "from", "number", "numbers", "rcpt", "callerId", "faxNumber"];
/**
 * Fields of free text (reasons, errors, SMTP replies, file names) that may quote a number as the
 * gateway writes it (+E.164) or an address made of one.
 */
const TEXT_KEYS = ["reason", "err", "reply", "file"];
export const NUMBER_PATHS = [...NUMBER_KEYS, ...TEXT_KEYS].flatMap((k) => [k, `*.${k}`]);

const DIGIT_RUN = /\+?\d[\d\s().-]{5,}\d/g;
const E164 = /\+\d{7,15}\b|\b\d{7,15}(?=@)/g;

/** Every digit of a run of seven or more but the last four becomes `*`: `+*******0400`. */
function lastFour(run: string): string {
  if (/^\d{4}-\d\d-\d\d/.test(run)) return run; // a date, as `from`/`to` of a range
  let keep = 4;
  const out = [...run];
  for (let i = out.length - 1; i >= 0; i--) {
    if (!/\d/.test(out[i]!)) continue;
    if (keep > 0) keep--;
    else out[i] = "*";
  }
  return out.join("");
}

/** What a logged value at `path` becomes: secrets censored whole, numbers cut to their end. */
export function censorLogValue(value: unknown, path: string[]): unknown {
  const key = path.at(-1) ?? "";
  const masked = (v: unknown, re: RegExp): unknown => {
    if (typeof v === "string") return v.replace(re, lastFour);
    if (Array.isArray(v)) return v.map((x) => masked(x, re));
    if (v && typeof v === "object") {
      // an error as pino's serializer left it ({type, message, stack}): a copy with its words cut
      const e = v as { message?: unknown; stack?: unknown };
      return { ...v, message: masked(e.message, re), ...(e.stack === undefined ? {} : { stack: masked(e.stack, re) }) };
    }
    return v;
  };
  if (NUMBER_KEYS.includes(key)) return masked(value, DIGIT_RUN);
  if (TEXT_KEYS.includes(key)) return masked(value, E164);
  return "[redacted]";
}

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
    redact: { paths: [...REDACT_PATHS, ...NUMBER_PATHS], censor: censorLogValue },
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

const LINE_METHODS = new Set(["trace", "debug", "info", "warn", "error", "fatal"]);

/**
 * `parent.child(bindings)` made only when something needs the child itself. A line written
 * before then goes through `parent` with the bindings in front of its own fields, which is the
 * line the child writes (pino puts a child's bindings before the line's fields, and censors both
 * by the same paths); a line whose first argument is not a plain object without those keys (an
 * Error, a field named like a binding) makes the child. pino's child creation redacts every
 * binding and gives the logger a prototype of its own: per mail it was a cost of every one
 * (issue 54, docs/bench.md), while most mails write one line.
 */
export function deferredChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  const made = (): Logger => {
    child ??= parent.child(bindings);
    return child;
  };
  const plainWithout = (obj: unknown): obj is Record<string, unknown> => {
    if (!obj || typeof obj !== "object" || Object.getPrototypeOf(obj) !== Object.prototype) return false;
    for (const k in bindings) if (Object.hasOwn(obj, k)) return false;
    return true;
  };
  return new Proxy(parent, {
    get(_target, prop) {
      if (child || typeof prop !== "string" || !LINE_METHODS.has(prop)) {
        const c = made();
        const v = Reflect.get(c, prop, c);
        return typeof v === "function" ? v.bind(c) : v;
      }
      return (...args: unknown[]) => {
        const [first, ...rest] = args;
        const line = parent[prop as "info"] as (...a: unknown[]) => void;
        if (child) return (child[prop as "info"] as (...a: unknown[]) => void)(...args);
        if (typeof first === "string") return line.call(parent, { ...bindings }, first, ...rest);
        if (plainWithout(first)) return line.call(parent, { ...bindings, ...first }, ...rest);
        const c = made();
        return (c[prop as "info"] as (...a: unknown[]) => void)(...args);
      };
    },
  }) as Logger;
}
