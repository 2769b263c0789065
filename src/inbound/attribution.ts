// Whose a received fax is. Not whichever configured key saw it first: an operator holding the
// account's admin key sees every user's faxes, so the polling order would decide, and a rule on
// `user` would send a patient's fax to the wrong inbox. The service's own record says whose it is
// (`users` in GET /v1/fax/{id}/info); both doors, poll and webhook, ask this one function.
import { isFaxgateError } from "../errors.js";
import type { FaxRecord } from "../fax/index.js";

export interface AttributionUsers {
  /** The configured users in config order (a reload replaces them). */
  users: () => ReadonlyArray<{ name: string; email?: string }>;
  /** A configured user's own record on the service (GET /v1/me, cached), for its service user id. */
  me: (user: string) => Promise<{ userId: string }>;
}

export interface Attribution {
  user: string;
  /** how: the service user id the record names, its email, or the key that saw it (none named) */
  by: "service user" | "email" | "key";
}

/** The first configured user (config order) whose service identity is `serviceUserId`. */
export async function configuredUserOf(serviceUserId: string, opts: AttributionUsers): Promise<string | undefined> {
  for (const u of opts.users()) {
    const me = await opts.me(u.name).catch(() => null);
    if (me?.userId === serviceUserId) return u.name;
  }
  return undefined;
}

/**
 * The configured user a received fax belongs to: the first, in config order, whose service user
 * id the record names; else the first whose email it names (a weaker key: the config's address may
 * differ from the service login); else `seenBy`, the user whose key found it. A temporary failure
 * to read a user's /v1/me throws (the fax is taken at its next sighting) rather than guess; a key
 * the service refuses for good is passed over.
 */
export async function attributeReceived(
  record: Pick<FaxRecord, "users">,
  seenBy: string,
  opts: AttributionUsers,
): Promise<Attribution> {
  const named = Array.isArray(record.users) ? record.users : [];
  const ids = new Set(named.map((n) => n?.userId).filter((v): v is string => typeof v === "string" && v !== ""));
  const emails = new Set(
    named
      .map((n) => n?.email)
      .filter((v): v is string => typeof v === "string" && v !== "")
      .map(lower),
  );
  if (ids.size === 0 && emails.size === 0) return { user: seenBy, by: "key" };
  let unsure: unknown = null;
  if (ids.size > 0) {
    for (const u of opts.users()) {
      const me = await opts.me(u.name).catch((err: unknown) => {
        if (!isFaxgateError(err) || err.temporary) unsure ??= err;
        return null;
      });
      if (!me || !ids.has(me.userId)) continue;
      // a user before this one, unread, may be the one named: config order must decide
      if (unsure) throw unsure;
      return { user: u.name, by: "service user" };
    }
  }
  if (unsure) throw unsure;
  for (const u of opts.users()) if (u.email && emails.has(lower(u.email))) return { user: u.name, by: "email" };
  return { user: seenBy, by: "key" };
}

const lower = (s: string) => s.toLowerCase();
