// A leaver's faxes already accepted (issue 50: "they were wanted when sent"): the person's key is
// gone with them, so their queued faxes are sent, and those at the service followed, with the
// office's admin key. Without one they fail at once saying why, rather than wait for
// queue.maxAge with nobody told.
import { FaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";

export interface LeaverClientOptions {
  /** the person's own client (throws for a name that is no user) */
  clientFor: (user: string) => FaxApi;
  /** whether this name is no user now and has left the directory */
  hasLeft: (user: string) => boolean;
  /** the account's admin client (api.adminKey), or null */
  admin: () => FaxApi | null;
}

export const LEAVER_NO_ADMIN =
  "the sender has left: the directory ended their access, and no api.adminKey is set to finish their faxes";

/** clientFor for the dispatcher: a leaver's faxes go out and are followed on the admin key. */
export function leaverAwareClients(opts: LeaverClientOptions): (user: string) => FaxApi {
  return (user) => {
    if (!opts.hasLeft(user)) return opts.clientFor(user);
    const admin = opts.admin();
    if (admin) return admin;
    throw new FaxgateError("SENDER_NOT_ALLOWED", LEAVER_NO_ADMIN);
  };
}
