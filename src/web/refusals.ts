// Recent refusals (SMTP and the print folders) for the operator's page: an in-process ring buffer
// fed by the intake's own REJECTED log lines, through a logger that passes everything on and
// keeps a copy of those lines. It holds what this process refused since it started, no more.
import type { Logger } from "../log/index.js";

export interface Refusal {
  at: string;
  /** smtp or spool (the component that refused) */
  source: string;
  user: string | null;
  /** the reply or reason as the sender was told it */
  reason: string;
}

const KEEP = 200;
// the fields a refusal line may carry that say who and why (never a password: those are not logged)
const REASON_FIELDS = ["reply", "reason"] as const;

export class RefusalLog {
  private readonly items: Refusal[] = [];

  constructor(private readonly now: () => number = Date.now) {}

  add(r: Omit<Refusal, "at">): void {
    this.items.push({ at: new Date(this.now()).toISOString(), ...r });
    if (this.items.length > KEEP) this.items.splice(0, this.items.length - KEEP);
  }

  /** Newest first. */
  recent(limit = 50): Refusal[] {
    return this.items.slice(-limit).reverse();
  }

  /**
   * A logger that behaves exactly as `logger` and also records its REJECTED lines (and those of
   * every child made from it) here.
   */
  tap(logger: Logger, source: string): Logger {
    return wrap(logger, (bindings, obj, msg) => {
      if (!msg.startsWith("REJECTED")) return;
      const reason = REASON_FIELDS.map((k) => obj[k]).find((v) => typeof v === "string") as string | undefined;
      const user = (obj.user ?? bindings().user ?? null) as string | null;
      this.add({
        source,
        user: typeof user === "string" ? user : null,
        reason: reason ?? (msg.slice("REJECTED".length).trim() || "refused"),
      });
    });
  }
}

/** `bindings` is a function: pino parses its bindings anew at each call, so only a refusal asks. */
type Seen = (bindings: () => Record<string, unknown>, obj: Record<string, unknown>, msg: string) => void;

function wrap(logger: Logger, seen: Seen): Logger {
  return new Proxy(logger, {
    get(target, prop, receiver) {
      if (prop === "child") {
        return (bindings: Record<string, unknown>, options?: unknown) =>
          wrap((target.child as unknown as (b: unknown, o?: unknown) => Logger).call(target, bindings, options), seen);
      }
      if (prop === "info" || prop === "warn" || prop === "error") {
        const fn = target[prop] as (...a: unknown[]) => void;
        return (...args: unknown[]) => {
          try {
            const [a, b] = args;
            const bindings = () => target.bindings();
            if (typeof a === "string") seen(bindings, {}, a);
            else if (a && typeof a === "object" && typeof b === "string")
              seen(bindings, a as Record<string, unknown>, b);
          } catch {
            // recording a refusal never gets in the way of logging it
          }
          return fn.apply(target, args);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
