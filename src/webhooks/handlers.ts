// What a webhook event does once the receiver (receiver.ts) has checked and parsed it: an outbound
// record goes to the dispatcher, and when it settled a fax the outcome mail goes out now, not at
// the notifier's next look; an inbound record goes to the received-fax door.
import { describeError } from "../errors.js";
import type { FaxRecord } from "../fax/index.js";
import type { Logger } from "../log/index.js";
import type { WebhookHandlers } from "./receiver.js";

export interface ServiceEventOptions {
  /** The dispatcher's door for a pushed record: "applied", "later" (not recorded yet), or not ours. */
  applyServiceRecord: (rec: FaxRecord) => Promise<string>;
  /** One notification run now (absent without notify). */
  notifyNow?: () => Promise<unknown>;
  /** A received fax (absent: inbound faxes are not followed, the event is acknowledged). */
  receivedFax?: (rec: FaxRecord, serviceUserId: string | null) => Promise<boolean>;
  logger: Logger;
}

export function serviceEventHandlers(opts: ServiceEventOptions): WebhookHandlers {
  return {
    outbound: async (rec) => {
      const outcome = await opts.applyServiceRecord(rec);
      if (outcome === "applied")
        opts
          .notifyNow?.()
          .catch((err) => opts.logger.warn({ err: describeError(err) }, "notification run after a webhook failed"));
      return outcome === "later" ? "later" : outcome === "applied";
    },
    inbound: (rec, serviceUserId) => opts.receivedFax?.(rec, serviceUserId) ?? false,
  };
}
