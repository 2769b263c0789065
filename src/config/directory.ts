// Where people come from besides `users:` (issue 50): an LDAP / Active Directory source synced on
// a timer, and SCIM 2.0 pushes (Entra ID, Okta, Google). The contract names the interval
// `syncMinutes` (a number); the house convention for new keys is a duration string, so both are
// read: `sync: "15m"` or `syncMinutes: 15`, not both (docs/identity.md).
import { z } from "zod";
import { duration, parseDuration } from "./duration.js";

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/;
const role = z.enum(["user", "admin"]);
/** group DN (LDAP) or displayName (SCIM) -> a faxgate role / inbox group names */
const groupMap = z
  .object({
    /** a member of one of these groups gets this role (admin wins over user) */
    roles: z.record(z.string().min(1), role).default({}),
    /** a member of a group here is a member of these inbound.groups inboxes */
    inbox: z
      .record(z.string().min(1), z.union([z.string().regex(NAME), z.array(z.string().regex(NAME)).min(1)]))
      .default({}),
  })
  .strict();

const ldapSchema = z
  .object({
    /** ldaps://host[:port] or ldap://host[:port] with startTls: true; plain ldap:// is refused */
    url: z.string().regex(/^ldaps?:\/\/[^/\s]+\/?$/, "expected ldaps://host[:port] or ldap://host[:port]"),
    /** upgrade an ldap:// connection with StartTLS before binding */
    startTls: z.boolean().default(false),
    /** an extra CA to trust for the directory's certificate (a private AD CS root) */
    caFile: z.string().min(1).optional(),
    /** the service account: its DN and password (from the secrets file: ${LDAP_BIND_PASSWORD}) */
    bindDn: z.string().min(1),
    bindPassword: z.string().min(1, "must not be empty"),
    /** where people are searched (subtree) */
    base: z.string().min(1),
    /** which entries are people of this gateway */
    filter: z.string().min(1).default("(&(objectClass=person)(mail=*))"),
    /** entries per page of the paged search (RFC 2696); AD answers at most 1000 */
    pageSize: z.number().int().min(1).max(10_000).default(500),
    /** a search or bind taking longer fails the sync */
    timeout: duration({ min: "1s", max: "10m" }).prefault("30s"),
    /** which attribute holds what */
    attributes: z
      .object({
        /** the short name faxgate knows the person by (AD: sAMAccountName) */
        name: z.string().min(1).default("uid"),
        mail: z.string().min(1).default("mail"),
        /** more sender addresses: proxyAddresses ("smtp:" entries), mailAlternateAddress, ... */
        aliases: z.array(z.string().min(1)).default(["proxyAddresses", "mailAlternateAddress"]),
        displayName: z.string().min(1).default("displayName"),
        /** the fax service's user id, when the directory keeps it (else `faxgate directory map`) */
        serviceUserId: z.string().min(1).optional(),
        /** a disabled account is left out: AD's userAccountControl bit 2 is read when named here */
        disabled: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    /** groups: searched once per sync, their member DNs mapped to roles and inboxes */
    groups: groupMap
      .extend({
        /** where groups are searched (default: base) */
        base: z.string().min(1).optional(),
        filter: z
          .string()
          .min(1)
          .default("(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=group))"),
        /** the attribute listing member DNs */
        member: z.string().min(1).default("member"),
      })
      .prefault({}),
  })
  .strict()
  .refine((l) => l.url.startsWith("ldaps://") || l.startTls, {
    message: "ldap:// sends the bind password in clear: use ldaps:// or startTls: true",
    path: ["url"],
  });

const scimSchema = groupMap
  .extend({
    /** the bearer token the provisioning client sends (from the secrets file: ${SCIM_TOKEN}) */
    token: z.string().min(32, "use at least 32 characters (Entra ID's secret token field)"),
  })
  .strict();

export const directorySchema = z
  .object({
    ldap: ldapSchema.optional(),
    scim: scimSchema.optional(),
    /** how often the LDAP source is read (a duration, "15m") */
    sync: duration({ min: "1m", max: "7d" }).optional(),
    /** the contract's name for the same interval, in minutes */
    syncMinutes: z.number().int().min(1).max(10_080).optional(),
    /**
     * a sync that would remove more than this share of the directory's people (0.25: a quarter)
     * is not applied: the last list stays and an operator confirms with `faxgate directory sync --accept-drop`
     */
    maxDrop: z.number().min(0).max(1).default(0.25),
    /**
     * keys follow people: with api.adminKey, a person with a service user id and no key gets one
     * minted, kept sealed in the store under `sealKey` (from the secrets file: ${FAXGATE_KEYS_SECRET})
     */
    keys: z
      .object({
        sealKey: z.string().min(32, "use at least 32 characters"),
        /** the minted key's expiresAt from its minting; the key watch rotates it before then */
        lifetime: duration({ min: "1d", max: "3650d" }).prefault("90d"),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((d) => d.sync === undefined || d.syncMinutes === undefined, {
    message: "give the interval once: sync (a duration) or syncMinutes (its alias), not both",
    path: ["syncMinutes"],
  });

export type DirectoryConfig = z.infer<typeof directorySchema>;
export type LdapConfig = NonNullable<DirectoryConfig["ldap"]>;
export type ScimConfig = NonNullable<DirectoryConfig["scim"]>;

/** The LDAP sync's interval in milliseconds, whichever name gave it (default 15 minutes). */
export function directorySyncMs(d: DirectoryConfig): number {
  return d.sync ?? (d.syncMinutes !== undefined ? d.syncMinutes * 60_000 : (parseDuration("15m") as number));
}
