// Durations in the config, one convention for every key that is not named in INTERFACES.md: a
// string with its unit ("250ms", "30s", "5m", "24h", "90d"), read as milliseconds. The keys the
// contract names with a unit in them (api.timeoutMs, directory.syncMinutes,
// smtp.senderAuth.maxMessageAgeHours) keep their names and numbers.
import { z } from "zod";

/** Milliseconds in each unit a duration may be written in. */
export const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const FORM = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/** "30s" -> 30000; null when `text` is not a number followed by one of ms, s, m, h, d. */
export function parseDuration(text: string): number | null {
  const m = FORM.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  return Number.isFinite(ms) ? Math.round(ms) : null;
}

/** 90000 -> "90s", 86400000 -> "1d": the largest unit that says it exactly (messages, `config show`). */
export function formatDuration(ms: number): string {
  for (const unit of ["d", "h", "m", "s"] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * A duration key: a string such as "30s", "5m", "24h" or "90d", read as milliseconds, between
 * `min` and `max` when given (each in the same form). Give its default with `.prefault("5m")`, so
 * the default is read by the same rule as a value written in the file.
 */
export function duration(bounds: { min?: string; max?: string } = {}) {
  const min = bounds.min === undefined ? 0 : mustParse(bounds.min);
  const max = bounds.max === undefined ? Number.MAX_SAFE_INTEGER : mustParse(bounds.max);
  const schema = z.string().transform((text, ctx): number => {
    const ms = parseDuration(text);
    if (ms === null) {
      ctx.addIssue({
        code: "custom",
        message: `must be a duration such as "30s", "5m", "24h" or "90d" (a number and one of ms, s, m, h, d), got "${text}"`,
      });
      return z.NEVER;
    }
    if (ms < min || ms > max) {
      const range =
        bounds.max === undefined ? `at least ${bounds.min}` : `between ${bounds.min ?? "0s"} and ${bounds.max}`;
      ctx.addIssue({ code: "custom", message: `must be ${range}, got "${text}"` });
      return z.NEVER;
    }
    return ms;
  });
  DURATIONS.add(schema);
  return schema;
}

const DURATIONS = new WeakSet<object>();

/**
 * `value` (parsed by `schema`) with every duration written back as a string ("60s"), so that a
 * config printed by `config check` reads back as the same config.
 */
export function durationsAsText(schema: z.ZodType, value: unknown): unknown {
  if (DURATIONS.has(schema)) return typeof value === "number" ? formatDuration(value) : value;
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  const inner = (s: unknown, v: unknown) => durationsAsText(s as z.ZodType, v);
  switch (def.type) {
    case "optional":
    case "default":
    case "prefault":
    case "nullable":
      return inner(def.innerType, value);
    case "pipe":
      return inner(def.out, value);
    case "array":
      return Array.isArray(value) ? value.map((v) => inner(def.element, v)) : value;
    case "union": {
      // a duration or a word (retention's "forever", read as null): written back as it was given
      const options = def.options as z.ZodType[];
      if (typeof value === "number" && options.some((o) => DURATIONS.has(o))) return formatDuration(value);
      if (value === null) {
        for (const o of options) {
          const od = (
            o as unknown as {
              _zod: { def: { type: string; in?: { _zod: { def: { type: string; values?: unknown[] } } } } };
            }
          )._zod.def;
          const word = od.type === "pipe" ? od.in?._zod.def : undefined;
          if (word?.type === "literal") return word.values?.[0];
        }
      }
      return value;
    }
    case "record":
      return isObject(value)
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inner(def.valueType, v)]))
        : value;
    case "object": {
      if (!isObject(value)) return value;
      const shape = def.shape as Record<string, unknown>;
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape[k] ? inner(shape[k], v) : v]));
    }
    default:
      return value;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function mustParse(text: string): number {
  const ms = parseDuration(text);
  if (ms === null) throw new Error(`not a duration: ${text}`);
  return ms;
}
