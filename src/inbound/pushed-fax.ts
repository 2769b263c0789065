// A received fax pushed by the service (a webhook) is a hint, not a fact: it is taken only when
// the service shows the fax to one of our users' own keys, then goes through the same door as a
// polled one (received-intake.ts), which attributes it by the fax info fetched here. A push that
// names no user we know starts one look at every user's inbound history instead.
import { configuredUserOf } from "./attribution.js";
import { type FaxApi, type FaxRecord, isNotShown } from "../fax/index.js";
import type { Logger } from "../log/index.js";

export interface PushedFaxOptions {
  users: () => ReadonlyArray<{ name: string }>;
  /** A configured user's own record on the service (GET /v1/me, cached), for its service user id. */
  me: (user: string) => Promise<{ userId: string }>;
  clientFor: (user: string) => FaxApi;
  /** One look at every user's inbound history (the inbound poller). */
  pollAll: () => Promise<void>;
  intake: { receive(user: string, r: FaxRecord, via: "webhook"): Promise<boolean> };
  logger: Logger;
}

/** The webhook's inbound handler: true when the fax was taken (now or before). */
export function pushedFaxHandler(opts: PushedFaxOptions) {
  return async (rec: FaxRecord, serviceUserId: string | null): Promise<boolean> => {
    // whose key asks the service; whose fax it is, the fax info says (attribution.ts)
    const user = serviceUserId ? await configuredUserOf(serviceUserId, opts) : undefined;
    if (!user) {
      await opts.pollAll();
      return true;
    }
    let told: FaxRecord;
    try {
      told = await opts.clientFor(user).faxInfo(rec.messageId);
    } catch (err) {
      if (isNotShown(err)) {
        opts.logger.warn(
          { user, messageId: rec.messageId },
          "webhook: the service does not know this received fax; not taken",
        );
        return false;
      }
      throw err;
    }
    if (told.direction && told.direction !== "inbound") return false;
    return opts.intake.receive(user, told, "webhook");
  };
}
