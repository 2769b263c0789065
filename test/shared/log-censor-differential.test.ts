// The log's censoring (src/log/logger.ts censorLine, one walk per line) against the pino redact
// option it replaced (issue 54), built here from the exported path lists as the logger had it:
// random lines, child loggers (childLog, the one way src/ makes them) and deferred children,
// Errors, through both, and every line of the new way must censor at least what the old way
// censored, and be the same wherever it censors no more (a value whole as "[redacted]", or more
// digits as `*`).
import { expect, it } from "vitest";
import { pino } from "pino";
import {
  type Logger,
  NUMBER_PATHS,
  REDACT_PATHS,
  censorLogValue,
  childLog,
  createLogger,
  deferredChild,
} from "../../src/log/logger.js";
import { prng } from "../helpers/prng.js";

const lastKey = (path: string) => path.split(".").at(-1)!;
const SECRET_KEYS = [...new Set(REDACT_PATHS.map(lastKey))];
const NUMBER_KEYS = [...new Set(NUMBER_PATHS.map(lastKey))];
// keys the paths name as parents, binding names, and keys no path names
const OTHER_KEYS = ["headers", "auth", "job", "session", "user", "message", "stack", "code", "list", "detail", "x"];
const STRINGS = [
  "+15551234567",
  "15551234567@fax.example.com",
  "send to +15551234567 failed",
  "+44 20 7946 0958",
  "553 <19005550123@fax.example.com>: +19005550123 is premium",
  "2026-11-29",
  "alice@example.com",
  "session-secret-1",
  "plain words",
  "",
];

interface Sink {
  lines: string[];
  write(line: string): void;
}
function sink(): Sink {
  const lines: string[] = [];
  return { lines, write: (line) => void lines.push(line) };
}

/** The logger as it was before issue 54's change: pino's redact option with the same paths. */
function oldLogger(destination: Sink): Logger {
  return pino(
    {
      name: "faxgate",
      level: "trace",
      redact: { paths: [...REDACT_PATHS, ...NUMBER_PATHS], censor: censorLogValue },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/** A random value from `rand`; the same seed makes the same value again (for the other logger). */
function value(rand: () => number, depth: number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const r = rand();
  if (depth < 4 && r < 0.3) return fields(rand, depth + 1);
  if (depth < 4 && r < 0.4) return Array.from({ length: Math.floor(rand() * 3) }, () => value(rand, depth + 1));
  if (r < 0.47) return error(rand, depth);
  if (r < 0.52) return Math.floor(rand() * 1e12);
  if (r < 0.55) return rand() < 0.5;
  if (r < 0.57) return null;
  return pick(STRINGS);
}

function error(rand: () => number, depth: number): Error {
  const message = STRINGS[Math.floor(rand() * STRINGS.length)]!;
  const e = new Error(message);
  // a stack of its own, the same in both loggers' copies (the real one names the caller's line)
  e.stack = `Error: ${message}\n    at send (/srv/faxgate/dist/send.js:12:3)`;
  if (rand() < 0.5) Object.assign(e, fields(rand, Math.max(depth, 3)));
  return e;
}

function fields(rand: () => number, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const n = Math.floor(rand() * 5);
  for (let i = 0; i < n; i++) {
    const r = rand();
    const keys = r < 0.3 ? SECRET_KEYS : r < 0.6 ? NUMBER_KEYS : OTHER_KEYS;
    out[keys[Math.floor(rand() * keys.length)]!] = value(rand, depth);
  }
  return out;
}

type MakeChild = (parent: Logger, bindings: Record<string, unknown>) => Logger;
/** pino's own child, as the old logger made every child (its redact option censored bindings). */
const pinoChild: MakeChild = (parent, bindings) => parent.child(bindings);

/**
 * Writes one random script (children made by `child` or deferred, lines) through `root`.
 * `deferred` is null for the old logger, which had no deferred children.
 */
function script(seed: number, root: Logger, child: MakeChild, deferred: MakeChild | null): void {
  const rand = prng(seed);
  let log = root;
  const loggers = [root];
  for (let i = 0; i < 12; i++) {
    const r = rand();
    if (r < 0.15) {
      const bindings = fields(rand, 0);
      delete bindings.err; // pino serializes a binding's err only for the child it makes
      const defer = rand() < 0.7; // drawn on both sides, so that they draw the same
      log = deferred && defer ? deferred(log, bindings) : child(log, bindings);
      loggers.push(log);
    } else if (r < 0.2) {
      log = loggers[Math.floor(rand() * loggers.length)]!;
    } else if (r < 0.3) {
      log.error(error(rand, 0), "could not send");
    } else if (r < 0.35) {
      log.info("a plain line");
    } else if (r < 0.38) {
      // an object as the whole message, so that the comparison can read it back
      log.info(rand() < 0.5 ? "%j" : "%o", fields(rand, 0));
    } else if (r < 0.4) {
      log.info({ job: "j-1" }, "%O", fields(rand, 0));
    } else if (r < 0.45) {
      log.warn({ err: value(rand, 1), ...fields(rand, 0) }, "with an err");
    } else if (r < 0.5) {
      // an error and no message: pino takes the message from the error
      // (of words: one made an object by its fields has pino's redact censor it in place while
      // the line is written, which no message of an Error is; test/shared/log-numbers.test.ts)
      const e = error(rand, rand() < 0.5 ? 0 : 1);
      if (typeof e.message !== "string") e.message = "an error";
      if (rand() < 0.5) log.error(e);
      else log.warn({ err: e, ...fields(rand, 0) });
    } else {
      log.info(fields(rand, 0), "a line");
    }
  }
}

/** Whether `now` is `was` with values censored whole or more digits cut, and nothing else changed. */
function censoredAtLeast(was: unknown, now: unknown): boolean {
  if (JSON.stringify(was) === JSON.stringify(now)) return true;
  if (now === "[redacted]") return true;
  if (typeof was === "string" && typeof now === "string") {
    if (was.startsWith("{") && now.startsWith("{")) return censoredAtLeast(JSON.parse(was), JSON.parse(now));
    if (was.length !== now.length) return false;
    for (let i = 0; i < was.length; i++) {
      if (was[i] !== now[i] && !(now[i] === "*" && /\d/.test(was[i]!))) return false;
    }
    return true;
  }
  if (Array.isArray(was) && Array.isArray(now)) {
    return was.length === now.length && was.every((w, i) => censoredAtLeast(w, now[i]));
  }
  if (was && now && typeof was === "object" && typeof now === "object") {
    const keys = Object.keys(was);
    if (JSON.stringify(keys) !== JSON.stringify(Object.keys(now))) return false;
    return keys.every((k) => censoredAtLeast((was as never)[k], (now as never)[k]));
  }
  return false;
}

const untimed = (line: string) => line.replace(/"time":"[^"]*",/, "");

it("censors every line at least as the redact paths did, and otherwise the same", () => {
  let lines = 0;
  let same = 0;
  let censored = 0;
  for (let seed = 1; seed <= 1500; seed++) {
    const before = sink();
    const after = sink();
    script(seed, oldLogger(before), pinoChild, null);
    script(seed, createLogger({ destination: after, level: "trace" }), childLog, seed % 2 === 0 ? deferredChild : null);
    expect(after.lines.length, `seed ${seed}`).toBe(before.lines.length);
    for (let i = 0; i < before.lines.length; i++) {
      const was = untimed(before.lines[i]!);
      const now = untimed(after.lines[i]!);
      lines++;
      if (was.includes("[redacted]") || was.includes("*")) censored++;
      if (was === now) {
        same++;
        continue;
      }
      const ok = censoredAtLeast(JSON.parse(was), JSON.parse(now));
      expect(ok, `seed ${seed} line ${i}\nold ${was}\nnew ${now}`).toBe(true);
    }
  }
  // the scripts reach what they should: many lines, most censored somewhere
  expect(lines).toBeGreaterThan(10_000);
  expect(censored).toBeGreaterThan(lines / 2);
  expect(same).toBeGreaterThan(lines / 2);
});

it("leaves the caller's objects as they were", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const rand = prng(seed);
    const line = fields(rand, 0);
    const copy = fields(prng(seed), 0);
    const bindings = { token: "t-1", job: { to: "+15551234567" } };
    const log = childLog(createLogger({ destination: sink(), level: "info" }), bindings);
    log.info(line, "a line");
    expect(JSON.stringify(line)).toBe(JSON.stringify(copy));
    expect(bindings).toEqual({ token: "t-1", job: { to: "+15551234567" } });
  }
});
