// A person as a directory source gives them, before they join the one live list: where they came
// from, the names and addresses they use, the role and inboxes their groups give them.
export type DirectorySourceName = "ldap" | "scim";

export interface DirectoryPerson {
  source: DirectorySourceName;
  /** the source's own id: the entry's DN (LDAP), the resource id (SCIM) */
  id: string;
  /** the short name faxgate knows them by (users[].name) */
  name: string;
  email: string;
  aliases: string[];
  displayName?: string;
  /** the fax service's user id, when the directory keeps it */
  serviceUserId?: string;
  role: "user" | "admin";
  /** inbound.groups inboxes they are a member of */
  inbox: string[];
}

/** What one read of a source found: its people, and what it had to leave out (and why). */
export interface SourceRead {
  people: DirectoryPerson[];
  groups: number;
  /** entries skipped, each with its reason (no mail, a name faxgate cannot use...) */
  skipped: Array<{ id: string; reason: string }>;
}

/** A source that is read whole on each sync (LDAP); SCIM pushes instead (scim/). */
export interface DirectorySource {
  readonly name: DirectorySourceName;
  read(): Promise<SourceRead>;
}

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/;

/** A directory's name as faxgate can use it (users[].name's rule), or null. AD names keep their case. */
export function usableName(raw: string): string | null {
  const name = raw.trim();
  return NAME.test(name) ? name : null;
}

const ADDRESS = /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+$/;

/** An address as the config takes it, or null; proxyAddresses' "smtp:"/"SMTP:" prefix removed, other types (x500:, sip:) dropped. */
export function usableAddress(raw: string): string | null {
  let v = raw.trim();
  const colon = v.indexOf(":");
  if (colon > 0 && !v.slice(0, colon).includes("@")) {
    if (v.slice(0, colon).toLowerCase() !== "smtp") return null;
    v = v.slice(colon + 1);
  }
  return ADDRESS.test(v) ? v : null;
}
