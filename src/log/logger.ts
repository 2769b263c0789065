// pino, the only logger. Components get child loggers (`component`, and `job` for job lines).
// Secrets are censored here, by key and depth, and never put into messages by the code that logs.
// Fax numbers are cut to their last four digits the same way: a log is read by whoever runs the
// host, and who faxed which practice is the office's to keep (the ledger keeps a keyed hash, the
// console the number).
import { isatty } from "node:tty";
import { pino, type Logger, type LoggerOptions, type DestinationStream } from "pino";

export type { Logger };

/**
 * Where secrets are censored, as pino redact paths (a field's key, `*` any key above it): what
 * `censorFields` censors, read off by key and depth (SECRET_DEPTH).
 */
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

/**
 * Each key's deepest depth in `paths` (0: a line's own field, 1: a field of one, ...). A key is
 * censored at every depth up to that one, under any parent: `headers.authorization` and
 * `*.headers.authorization` make `authorization` a secret to depth 2 wherever it is, which
 * censors more than the paths did, never less.
 */
function deepest(paths: readonly string[]): Map<string, number> {
  const depths = new Map<string, number>();
  for (const path of paths) {
    const parts = path.split(".");
    const key = parts.at(-1)!;
    depths.set(key, Math.max(depths.get(key) ?? 0, parts.length - 1));
  }
  return depths;
}
const SECRET_DEPTH = deepest(REDACT_PATHS);
const NUMBER_DEPTH = deepest(NUMBER_PATHS);
/**
 * No path reaches below this depth (`*.*.apiKey`), so the walk does not enter objects deeper:
 * a line costs a look at its fields and theirs, not a walk of everything it carries.
 */
const WALK_DEPTH = Math.max(...SECRET_DEPTH.values(), ...NUMBER_DEPTH.values());

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

/** What of a value's fields `censorFields` censors. */
enum Walk {
  /** secrets and numbers */
  All,
  /** the same, but not a line's own `err`: pino's err serializer runs after `formatters.log` */
  NotErr,
  /**
   * secrets only: below a line's own number or text field, which the paths censored with
   * `censorLogValue` alone (pino's redact skips the paths below a first-level path); a number key
   * down there (an Error's under `reason`) would come out as its message and stack.
   */
  Secrets,
  /**
   * secrets and numbers, also below a number or text field: an object put into a message, which
   * pino's redact censored by every path (its first-level paths skip nothing there)
   */
  Message,
}

/** `value` (the field `key`, at `depth`) as the log may show it. */
function censorField(key: string, value: unknown, depth: number, walk = Walk.All): unknown {
  if (depth <= (SECRET_DEPTH.get(key) ?? -1)) return "[redacted]";
  if (walk === Walk.Secrets || depth > (NUMBER_DEPTH.get(key) ?? -1)) {
    return depth < WALK_DEPTH ? censorFields(value, depth + 1, walk) : value;
  }
  const censored = censorLogValue(value, [key]);
  return depth < WALK_DEPTH
    ? censorFields(censored, depth + 1, depth === 0 && walk !== Walk.Message ? Walk.Secrets : walk)
    : censored;
}

/**
 * The fields of `value` (at `depth`) censored, in a copy made only if one changes (`copyWith`):
 * the caller's objects stay as they are, and a line with nothing to censor costs no copy.
 */
function censorFields(value: unknown, depth: number, walk: Walk): unknown {
  if (!value || typeof value !== "object") return value;
  const inner = walk === Walk.NotErr ? Walk.All : walk;
  if (Array.isArray(value)) {
    if (depth >= WALK_DEPTH) return value; // an element's fields would be below the deepest path
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const was = value[i];
      const now = censorFields(was, depth + 1, inner);
      if (now !== was) (out ??= value.slice())[i] = now;
    }
    return out ?? value;
  }
  let changed: Record<string, unknown> | undefined;
  const fields = value as Record<string, unknown>;
  for (const key in fields) {
    if (!Object.hasOwn(fields, key) || (walk === Walk.NotErr && key === "err")) continue;
    const was = fields[key];
    if (was === undefined) continue;
    const now = censorField(key, was, depth, inner);
    if (now !== was) (changed ??= {})[key] = now;
  }
  return changed ? copyWith(fields, changed) : value;
}

/**
 * `fields` with the `changed` ones in, as a copy. An object with a `toJSON` of its own kind keeps
 * its prototype, so that it writes as it did, when that `toJSON` works on the copy; one reading
 * private fields or internal slots (a URL, a Date, a class with `#fields`) throws there, and
 * pino would write "[unable to serialize ...]" instead of the line. Such an object, and any other
 * (JSON writes only own fields), becomes a plain object of its own fields, censored.
 */
function copyWith(fields: Record<string, unknown>, changed: Record<string, unknown>): Record<string, unknown> {
  const plain = { ...fields, ...changed };
  const proto = Object.getPrototypeOf(fields);
  if (proto === Object.prototype || proto === null || typeof fields.toJSON !== "function") return plain;
  // defined, not assigned: a setter of the prototype (URL's `password`) would throw on the copy
  const copy = Object.create(proto) as Record<string, unknown>;
  for (const key of Reflect.ownKeys(plain)) {
    Object.defineProperty(copy, key, {
      value: plain[key as string],
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  try {
    (copy.toJSON as (key: string) => unknown)("");
    return copy;
  } catch {
    return plain;
  }
}

/** A line's own fields (or a child's bindings) as the log may show them. */
function censorLine(fields: Record<string, unknown>): Record<string, unknown> {
  return censorFields(fields, 0, Walk.NotErr) as Record<string, unknown>;
}

/**
 * A line's objects put into its message (`%j`, `%o`, `%O`) censored as its fields: pino's redact
 * censored them too, and `formatters.log` does not see them. A line of an error and no message
 * (`log.error(err)`, `log.warn({ err })`) is given the error's message censored as the err
 * serializer censors it: pino would copy the raw `err.message` into `msg` (pino 10 lib/proto.js
 * write), a number in it whole.
 */
function censorInterpolated(this: Logger, args: unknown[], method: (...a: unknown[]) => void): void {
  const first = args[0];
  if (args.length <= 2 && args[1] === undefined && first && typeof first === "object") {
    // pino's own test for taking the message from the error
    const err =
      first instanceof Error
        ? first
        : (first as { msg?: unknown; err?: unknown }).msg === undefined
          ? (first as { err?: unknown }).err
          : undefined;
    const message = err ? (err as { message?: unknown }).message : undefined;
    if (typeof message === "string") args[1] = censorLogValue(message, ["err"]);
    else if (message !== undefined) args[1] = censorFields(message, 0, Walk.Message);
  }
  const from = typeof first === "string" ? 1 : 2;
  for (let i = from; i < args.length; i++) args[i] = censorFields(args[i], 0, Walk.Message);
  method.apply(this, args);
}

/** pino's err serializer, then the censoring of a line's `err` (a text field: its message and stack). */
function errSerializer(err: unknown): unknown {
  return censorField("err", pino.stdSerializers.err(err as Error), 0);
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
    // One walk per line of faxgate's own (censorLine) instead of pino's redact option: its
    // wildcard paths walked every value of every line (issue 54, docs/bench.md).
    formatters: { log: censorLine },
    serializers: { err: errSerializer },
    hooks: { logMethod: censorInterpolated },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
}

/**
 * `parent.child(bindings)` with the bindings censored as a line's fields are; every child logger
 * of faxgate is made here (test/shared/log-child-calls.test.ts refuses a `.child(` elsewhere in
 * src/). pino calls `formatters.bindings` for the root's own bindings (pid) only: a child's
 * formatter is reset for its children unless given again in their options (pino 10 lib/proto.js),
 * so the bindings are censored before pino sees them, which also keeps pino's quick path for a
 * child made without options. No library is handed a faxgate logger to make children of its own
 * (fastify, imapflow and nodemailer run with `logger: false`, smtp-server with none); one that is
 * would bind its own fields uncensored (fastify: `reqId`, a counter), though its lines' fields
 * still pass `formatters.log`.
 */
export function childLog(parent: Logger, bindings: Record<string, unknown>): Logger {
  return parent.child(censorLine(bindings));
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
  const pretty = opts.format === "pretty" || (opts.format !== "json" && isatty(1));
  if (pretty) {
    return pino({
      ...options,
      transport: {
        target: "pino-pretty",
        options: { colorize: true, translateTime: "SYS:standard", ignore: "pid,hostname" },
      },
    });
  }
  const out = pino.destination({ dest: 1, sync: false, maxLength: STDOUT_BUFFER_BYTES });
  const logger = pino(options, withCopy(out));
  reportDrops(out, logger);
  return logger;
}

/**
 * What stdout may hold unwritten while nothing reads it (createLogger writes it from a buffer);
 * lines beyond it are dropped and counted.
 */
export const STDOUT_BUFFER_BYTES = 16 * 1024 * 1024;

/**
 * stdout is written from a buffer so that a slow reader never stops the main thread. fd 1 is
 * non-blocking as soon as Node has made process.stdout or process.stderr (every Worker does, and
 * node:assert; under systemd both share the journal's socket): a synchronous writer then sleeps
 * 100 ms on each EAGAIN (sonic-boom) while every SMTP session waits (issue 54, docs/bench.md).
 * pino writes what is left synchronously when the process exits. Here: the lines the bounded
 * buffer drops while nothing reads are counted in a line of their own once writing goes on.
 */
function reportDrops(out: ReturnType<typeof pino.destination>, log: Logger): void {
  let dropped = 0;
  out.on("drop", () => {
    dropped += 1;
  });
  out.on("write", () => {
    if (dropped === 0) return;
    const lines = dropped;
    dropped = 0;
    // after sonic-boom has counted the bytes just written
    setImmediate(() => log.warn({ lines }, "log lines dropped: stdout was not read while they were written"));
  });
}

/** A logger that drops everything (tests and tools that do not care), except into FAXGATE_LOG_COPY. */
export function silentLogger(): Logger {
  const copy = copyStream();
  return copy ? pino(baseOptions("faxgate", "debug"), copy) : pino({ level: "silent" });
}

const LINE_METHODS = new Set(["trace", "debug", "info", "warn", "error", "fatal"]);

type Line = (...args: unknown[]) => void;

/** A deferred child's parent and bindings, and its child once made. */
interface Deferred {
  parent: Logger;
  bindings: Record<string, unknown>;
  child?: Logger;
}

/** Each deferred child (the Proxy deferredChild returns) to what it defers. */
const DEFERRED = new WeakMap<object, Deferred>();

/**
 * `childLog(parent, bindings)` made only when something needs the child itself. A line written
 * before then goes through `parent` with the bindings in front of its own fields, which is the
 * line the child writes (pino puts a child's bindings before the line's fields, and both are
 * censored by the same keys and depths); a line whose first argument is not a plain object
 * without those keys (an Error, a field named like a binding) makes the child. pino's child
 * creation serializes every binding and gives the logger a prototype of its own: per mail it was
 * a cost of every one (issue 54, docs/bench.md), while most mails write one line.
 *
 * A deferred child of a deferred child that has not made its own defers to the same parent with
 * both bindings, the outer first (the order pino's child of a child writes them): one Proxy a
 * line, not one a level. Each level cost a line about 8 us (a session's, a user's and a job's:
 * about 25 us of a mail's QUEUED line, docs/bench.md "One Proxy a line").
 */
export function deferredChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  const above = DEFERRED.get(parent);
  if (above && !above.child) {
    parent = above.parent;
    bindings = Object.assign({}, above.bindings, bindings);
  }
  const d: Deferred = { parent, bindings };
  const made = (): Logger => {
    d.child ??= childLog(parent, bindings);
    return d.child;
  };
  const plainWithout = (obj: unknown): obj is Record<string, unknown> => {
    if (!obj || typeof obj !== "object" || Object.getPrototypeOf(obj) !== Object.prototype) return false;
    // (an own "__proto__" would be the copy's prototype under Object.assign: such a line makes the child)
    if (Object.hasOwn(obj, "__proto__")) return false;
    for (const k in bindings) if (Object.hasOwn(obj, k)) return false;
    return true;
  };
  // each line method made once, on first use
  const lines = new Map<string, Line>();
  const lineOf = (prop: string): Line => {
    let fn = lines.get(prop);
    if (!fn) {
      fn = (...args: unknown[]) => {
        if (d.child) return (d.child[prop as "info"] as Line)(...args);
        const first = args[0];
        const line = parent[prop as "info"] as Line;
        if (typeof first === "string") return line.call(parent, { ...bindings }, ...args);
        if (plainWithout(first)) {
          // (not { ...bindings, ...first }: on Node 20 a property added to an object a spread made
          // takes about 1 us, and a second spread several, docs/bench.md "One Proxy a line")
          args[0] = Object.assign({}, bindings, first);
          return line.apply(parent, args);
        }
        return (made()[prop as "info"] as Line)(...args);
      };
      lines.set(prop, fn);
    }
    return fn;
  };
  const proxy = new Proxy(parent, {
    get(_target, prop) {
      if (d.child || typeof prop !== "string" || !LINE_METHODS.has(prop)) {
        const c = made();
        const v = Reflect.get(c, prop, c);
        return typeof v === "function" ? v.bind(c) : v;
      }
      return lineOf(prop);
    },
  }) as Logger;
  DEFERRED.set(proxy, d);
  return proxy;
}
