// The LDAP / Active Directory source (ldapts): bind as the service account over TLS (ldaps:// or
// StartTLS), read the groups, then the people, both with paged searches (RFC 2696; AD hands out
// at most 1000 entries per page), and turn each entry into a person. Entries faxgate cannot use
// (no mail, a name outside users[].name's rule, a disabled AD account) are skipped with a reason.
import { readFileSync } from "node:fs";
import { checkServerIdentity, type ConnectionOptions } from "node:tls";
import { Client, type Entry } from "ldapts";
import type { LdapConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import { groupKey, groupMeaning } from "./group-map.js";
import { type DirectoryPerson, type DirectorySource, type SourceRead, usableAddress, usableName } from "./person.js";

/** AD's userAccountControl ACCOUNTDISABLE bit. */
const ACCOUNT_DISABLED = 0x2;

function values(entry: Entry, attr: string | undefined): string[] {
  if (!attr) return [];
  // attribute names compare without case (ldapts keeps the server's spelling)
  const key = Object.keys(entry).find((k) => k.toLowerCase() === attr.toLowerCase());
  const v = key === undefined ? undefined : entry[key];
  if (v === undefined) return [];
  const list = Array.isArray(v) ? v : [v];
  return list.map((x) => (Buffer.isBuffer(x) ? x.toString("utf8") : x)).filter((x) => x !== "");
}

export class LdapSource implements DirectorySource {
  readonly name = "ldap" as const;

  constructor(private readonly config: LdapConfig) {}

  async read(): Promise<SourceRead> {
    const c = this.config;
    const tlsOptions: ConnectionOptions = {};
    if (c.caFile) tlsOptions.ca = readFileSync(c.caFile, "utf8");
    // tlsOptions only for ldaps://: given to an ldap:// client, ldapts opens TLS before StartTLS
    const client = new Client({
      url: c.url,
      timeout: c.timeout,
      connectTimeout: c.timeout,
      ...(c.startTls ? {} : { tlsOptions }),
    });
    try {
      // the upgraded socket is checked against the URL's host (ldapts would name none: "localhost")
      if (c.startTls) {
        const host = new URL(c.url).hostname;
        await client.startTLS({ ...tlsOptions, checkServerIdentity: (_, cert) => checkServerIdentity(host, cert) });
      }
      await client.bind(c.bindDn, c.bindPassword);
      const memberOf = await this.groupsByMember(client);
      const a = c.attributes;
      const attributes = [a.name, a.mail, a.displayName, ...a.aliases, "memberOf"];
      if (a.serviceUserId) attributes.push(a.serviceUserId);
      if (a.disabled) attributes.push(a.disabled);
      const read: SourceRead = { people: [], groups: memberOf.groupCount, skipped: [] };
      for await (const page of client.searchPaginated(c.base, {
        scope: "sub",
        filter: c.filter,
        attributes,
        paged: { pageSize: c.pageSize },
      })) {
        for (const entry of page.searchEntries) {
          const person = this.person(entry, memberOf.byMember);
          if (typeof person === "string") read.skipped.push({ id: entry.dn, reason: person });
          else read.people.push(person);
        }
      }
      return read;
    } catch (err) {
      if (err instanceof FaxgateError) throw err;
      // the bind password never reaches the message: ldapts' errors name the operation and result code
      const what = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      throw new FaxgateError("DIRECTORY_UNAVAILABLE", `LDAP ${c.url}: ${what}`, { cause: err });
    } finally {
      await client.unbind().catch(() => undefined);
    }
  }

  /** Every group's DN by the DNs of its members (group DNs compared by groupKey). */
  private async groupsByMember(client: Client): Promise<{ byMember: Map<string, string[]>; groupCount: number }> {
    const g = this.config.groups;
    const byMember = new Map<string, string[]>();
    let groupCount = 0;
    if (Object.keys(g.roles).length === 0 && Object.keys(g.inbox).length === 0) return { byMember, groupCount };
    for await (const page of client.searchPaginated(g.base ?? this.config.base, {
      scope: "sub",
      filter: g.filter,
      attributes: [g.member],
      paged: { pageSize: this.config.pageSize },
    })) {
      for (const entry of page.searchEntries) {
        groupCount += 1;
        for (const member of values(entry, g.member)) {
          const k = groupKey(member);
          const list = byMember.get(k);
          if (list) list.push(entry.dn);
          else byMember.set(k, [entry.dn]);
        }
      }
    }
    return { byMember, groupCount };
  }

  private person(entry: Entry, byMember: Map<string, string[]>): DirectoryPerson | string {
    const a = this.config.attributes;
    const rawName = values(entry, a.name)[0];
    if (!rawName) return `no ${a.name}`;
    const name = usableName(rawName);
    if (!name) return `${a.name} is not a usable name (letters, digits, . _ - up to 64)`;
    if (a.disabled) {
      const flags = Number(values(entry, a.disabled)[0] ?? "0");
      if (Number.isFinite(flags) && flags & ACCOUNT_DISABLED) return "the account is disabled";
    }
    const mails = values(entry, a.mail)
      .map(usableAddress)
      .filter((m): m is string => m !== null);
    const email = mails[0];
    if (!email) return `no usable ${a.mail}`;
    // a mail attribute's further values are aliases too (OpenLDAP keeps alternates there)
    const others = [...mails.slice(1), ...a.aliases.flatMap((attr) => values(entry, attr).map(usableAddress))];
    const aliases = [
      ...new Set(others.filter((m): m is string => m !== null && m.toLowerCase() !== email.toLowerCase())),
    ];
    const groups = [...(byMember.get(groupKey(entry.dn)) ?? []), ...values(entry, "memberOf")];
    const { role, inbox } = groupMeaning(this.config.groups, groups);
    const person: DirectoryPerson = { source: "ldap", id: entry.dn, name, email, aliases, role, inbox };
    const displayName = values(entry, a.displayName)[0];
    if (displayName) person.displayName = displayName;
    const serviceUserId = values(entry, a.serviceUserId)[0];
    if (serviceUserId) person.serviceUserId = serviceUserId;
    return person;
  }
}
