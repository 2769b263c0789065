// Whose a received fax is. Not whichever configured key saw it first: an operator holding the
// account's admin key sees every user's faxes, so the polling order would decide, and a rule on
// `user` would send a patient's fax to the wrong inbox. The service's own record says whose it is
// (`users` in GET /v1/fax/{id}/info); both doors, poll and webhook, ask this one function.
import { isFaxgateError } from "../errors.js";
import type { FaxRecord } from "../fax/index.js";

export interface AttributionUsers {
  /** The configured users in config order (a reload replaces them). */
  users: () => ReadonlyArray<{ name: string; email?: string }>;
  /**
   * A configured user's own record on the service (GET /v1/me, cached): its service user id, and
   * for a tie its numbers and role.
   */
  me: (user: string) => Promise<ServiceSelf>;
}

/** What attribution reads of GET /v1/me (fax/types.ts User). */
export interface ServiceSelf {
  userId: string;
  phone?: string;
  userRole?: string;
  faxNumbers?: unknown[];
}

export interface Attribution {
  user: string;
  /** how: the service user id the record names, its email, or the key that saw it (none named) */
  by: "service user" | "email" | "key";
  /** by "key": the record named nobody, or only users not configured here */
  named?: "nobody" | "unknown users";
  /** several configured users named and only config order chose: the others */
  tiedWith?: string[];
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
 * The configured user a received fax belongs to: of those whose service user id the record names,
 * the one the tie-break picks (tieBreak below); else the first whose email it names (a weaker key:
 * the config's address may differ from the service login); else `seenBy`, the user whose key found
 * it. A temporary failure to read a user's /v1/me throws (the fax is taken at its next sighting)
 * rather than guess; a key the service refuses for good is passed over.
 */
export async function attributeReceived(
  record: Pick<FaxRecord, "users"> & Partial<Pick<FaxRecord, "faxNumber">>,
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
  if (ids.size === 0 && emails.size === 0) return { user: seenBy, by: "key", named: "nobody" };
  // every configured user is read: an unreadable one may be among those named, and the tie-break
  // needs all of them
  let unsure: unknown = null;
  const matches: Array<{ name: string; me: ServiceSelf }> = [];
  if (ids.size > 0) {
    for (const u of opts.users()) {
      const me = await opts.me(u.name).catch((err: unknown) => {
        if (!isFaxgateError(err) || err.temporary) unsure ??= err;
        return null;
      });
      if (me && ids.has(me.userId)) matches.push({ name: u.name, me });
    }
  }
  if (unsure) throw unsure;
  if (matches.length > 0) return { ...tieBreak(matches, record.faxNumber), by: "service user" };
  const byEmail = opts.users().filter((u) => u.email && emails.has(lower(u.email)));
  if (byEmail.length > 0) return { user: byEmail[0]!.name, by: "email" };
  return { user: seenBy, by: "key", named: "unknown users" };
}

/**
 * Among several configured users the record names, whose the fax is. fax-api.md does not say what
 * `users` means; if it names everyone who can see the fax (an admin key's holder too), config
 * order alone would give the fax to whoever is listed first. So: those whose own record holds the
 * number dialled, then those who are not admins, then config order (`tiedWith` says it decided).
 */
function tieBreak(
  matches: Array<{ name: string; me: ServiceSelf }>,
  dialled: string | undefined,
): { user: string; tiedWith?: string[] } {
  let pool = matches;
  const number = digits(dialled);
  if (number) pool = narrow(pool, (m) => numbersOf(m.me).includes(number));
  pool = narrow(pool, (m) => !/admin/i.test(m.me.userRole ?? ""));
  return pool.length > 1
    ? { user: pool[0]!.name, tiedWith: pool.slice(1).map((m) => m.name) }
    : { user: pool[0]!.name };
}

/** The ones that pass, or all when none does (a test that tells nobody apart decides nothing). */
function narrow<T>(pool: T[], test: (t: T) => boolean): T[] {
  const kept = pool.filter(test);
  return kept.length > 0 ? kept : pool;
}

/** A user's numbers as digits: `phone`, and `faxNumbers` (element shape not documented: strings, or objects' string fields). */
function numbersOf(me: ServiceSelf): string[] {
  const raw: unknown[] = [me.phone];
  for (const n of Array.isArray(me.faxNumbers) ? me.faxNumbers : []) {
    if (typeof n === "string") raw.push(n);
    else if (n && typeof n === "object") raw.push(...Object.values(n).filter((v) => typeof v === "string"));
  }
  return raw.map(digits).filter((d) => d !== "");
}

const digits = (s: unknown): string => (typeof s === "string" ? s.replace(/\D/g, "") : "");

const lower = (s: string) => s.toLowerCase();
