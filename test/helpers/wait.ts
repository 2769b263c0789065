// The one way tests wait. First choice: an event the code under test emits (when, nextEvent,
// OutputWatch.waitFor); polling with waitUntil only where a state can be seen but not heard (a
// folder, a table, the emulator's faxes). Every wait has a bound and fails naming what it waited
// for. Never a fixed sleep before an assertion.
import type { EventEmitter } from "node:events";

/**
 * Resolves once `cond()` holds, checked at once and after every event `subscribe` reports (it
 * returns its unsubscribe); fails after `timeoutMs`.
 */
export function when(
  cond: () => boolean,
  subscribe: (listener: () => void) => () => void,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (cond()) return resolve();
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out waiting for ${what}`));
    }, timeoutMs);
    const off = subscribe(() => {
      if (!cond()) return;
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}

/** The arguments of the next `event` of `emitter` for which `match` holds; fails after `timeoutMs`. */
export function nextEvent(
  emitter: EventEmitter,
  event: string,
  what: string,
  match: (...args: unknown[]) => boolean = () => true,
  timeoutMs = 20_000,
): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const on = (...args: unknown[]) => {
      if (!match(...args)) return;
      clearTimeout(timer);
      emitter.off(event, on);
      resolve(args);
    };
    const timer = setTimeout(() => {
      emitter.off(event, on);
      reject(new Error(`timed out waiting for ${what}`));
    }, timeoutMs);
    emitter.on(event, on);
  });
}

/**
 * The fallback: looks at `fn()` every `intervalMs` until it returns a truthy value, and resolves
 * with it; fails after `timeoutMs` naming `what`.
 */
export async function waitUntil<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Collects a stream's text (a child's output) and waits, on its data events, for a pattern in it. */
export class OutputWatch {
  text = "";
  private readonly stream: NodeJS.ReadableStream;
  constructor(stream: NodeJS.ReadableStream) {
    this.stream = stream;
    stream.on("data", (d) => {
      this.text += d;
    });
  }

  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    let m: RegExpExecArray | null = null;
    const found = () => {
      pattern.lastIndex = 0;
      m = pattern.exec(this.text);
      return m !== null;
    };
    const subscribe = (listener: () => void) => {
      this.stream.on("data", listener);
      return () => {
        this.stream.off("data", listener);
      };
    };
    try {
      await when(found, subscribe, String(pattern), timeoutMs);
    } catch {
      throw new Error(`timed out waiting for ${pattern}; output so far:\n${this.text.slice(-4000)}`);
    }
    return m!;
  }
}
