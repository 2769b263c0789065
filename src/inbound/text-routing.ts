// Faxes held for their text (inbound.routes[].match.text, issue 51) are routed when the text is
// known: at once when this gateway's OCR duty says so, and by a sweep for the rest (a wait that
// ran out, a text read by another gateway sharing the queue).
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import { describeError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { Periodic } from "../periodic.js";
import { type Db, textsToRoute } from "../store/index.js";
import type { ReceivedFaxIntake } from "./received-intake.js";

export interface TextRoutingOptions {
  store: { readonly sql: Db };
  intake: Pick<ReceivedFaxIntake, "routeWithText">;
  logger: Logger;
  clock?: Clock;
  /** Between sweeps (a known text wakes it sooner). */
  intervalMs: number;
  /** Called after every sweep (tests wait on it). */
  onSwept?: () => void;
}

export class TextRouting {
  private readonly loop: Periodic<void>;
  private readonly clock: Clock;

  constructor(private readonly o: TextRoutingOptions) {
    this.clock = o.clock ?? systemClock;
    this.loop = new Periodic(() => this.sweep(), {
      intervalMs: o.intervalMs,
      onError: (err) => o.logger.error({ err: describeError(err) }, "held faxes could not be routed; trying again"),
      onRunEnd: o.onSwept,
      unref: true,
    });
  }

  start(): void {
    this.loop.start();
  }

  /** A text became known: route what waited for it now. */
  wake(): void {
    this.loop.wake();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  async sweep(): Promise<void> {
    const due = await textsToRoute(this.o.store.sql, new Date(this.clock.now()).toISOString());
    for (const t of due) {
      try {
        await this.o.intake.routeWithText(t);
      } catch (err) {
        // stays held: the next sweep tries again
        this.o.logger.error({ received: t.faxId, err: describeError(err) }, "held fax could not be routed");
      }
    }
  }
}
