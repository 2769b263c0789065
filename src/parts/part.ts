// The gateway is one list of parts, started in order and stopped in reverse (STYLE.md habits 10
// and 15): each part says how it starts, how it stops and what readiness it reports; the list in
// main.ts is the only place that knows the order.
import { describeError } from "../errors.js";
import type { Logger } from "../log/index.js";

export interface HealthCheck {
  ok: boolean;
  detail?: string;
}

export interface Part {
  name: string;
  start?(): void | Promise<void>;
  /** `left()`: the milliseconds still in the shutdown's bound (never under a second). */
  stop?(left: () => number): void | Promise<void>;
  /** Readiness checks of a listener part (smtp, spool, imap), by check name. */
  checks?(): Record<string, HealthCheck>;
}

/** Starts the parts in list order; the first failure ends the start (stopParts then stops them all). */
export async function startParts(parts: readonly Part[]): Promise<void> {
  for (const part of parts) await part.start?.();
}

/** Stops the parts in reverse order within `timeoutMs`; a part that fails is logged and the rest go on. */
export async function stopParts(
  parts: readonly Part[],
  opts: { timeoutMs: number; now: () => number; logger: Logger },
): Promise<void> {
  const deadline = opts.now() + opts.timeoutMs;
  const left = () => Math.max(1000, deadline - opts.now());
  for (const part of [...parts].reverse()) {
    try {
      await part.stop?.(left);
    } catch (err) {
      opts.logger.warn({ err: describeError(err) }, `shutdown: ${part.name} failed`);
    }
  }
}

/** Every part's readiness checks in one record (the admin server's /ready). */
export function partChecks(parts: readonly Part[]): Record<string, HealthCheck> {
  return Object.assign({}, ...parts.map((p) => p.checks?.() ?? {}));
}
