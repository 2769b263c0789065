// The one list of people: the config's users, then the directory's. A config entry wins over a
// directory person with the same name or address (it is the operator's deliberate word; `config
// check` and the log say which were shadowed). A directory person gets no key here: keys are the
// key holder's (keys follow people), and a person without one cannot send until it is minted.
import type { Config, UserConfig } from "../config/index.js";
import type { DirectoryPerson } from "./person.js";

export interface Shadowed {
  person: DirectoryPerson;
  /** the config user (or the earlier directory person) who keeps the name or address */
  by: string;
  why: "name" | "address";
}

export function mergePeople(
  configUsers: readonly UserConfig[],
  people: readonly DirectoryPerson[],
): { users: UserConfig[]; shadowed: Shadowed[]; taken: DirectoryPerson[] } {
  const byName = new Map<string, string>();
  const byAddress = new Map<string, string>();
  const take = (name: string, addresses: readonly string[]) => {
    byName.set(name.toLowerCase(), name);
    for (const a of addresses) byAddress.set(a.toLowerCase(), name);
  };
  for (const u of configUsers) take(u.name, [u.email, ...u.aliases]);
  const users = [...configUsers];
  const shadowed: Shadowed[] = [];
  const taken: DirectoryPerson[] = [];
  for (const p of people) {
    const addresses = [p.email, ...p.aliases];
    const sameName = byName.get(p.name.toLowerCase());
    if (sameName !== undefined) {
      shadowed.push({ person: p, by: sameName, why: "name" });
      continue;
    }
    const sameAddress = addresses.map((a) => byAddress.get(a.toLowerCase())).find((n) => n !== undefined);
    if (sameAddress !== undefined) {
      shadowed.push({ person: p, by: sameAddress, why: "address" });
      continue;
    }
    take(p.name, addresses);
    const user: UserConfig = { name: p.name, email: p.email, aliases: p.aliases, apiKey: "", role: p.role };
    if (p.serviceUserId) user.serviceUserId = p.serviceUserId;
    users.push(user);
    taken.push(p);
  }
  return { users, shadowed, taken };
}

/** inbound.groups with the members the directory gives (`taken`: mergePeople's); a group must be configured to exist. */
export function withDirectoryInboxes(inbound: Config["inbound"], taken: readonly DirectoryPerson[]): Config["inbound"] {
  const groups = { ...inbound.groups };
  for (const p of taken) {
    for (const g of p.inbox) {
      const group = groups[g];
      if (group && !group.members.includes(p.name)) groups[g] = { ...group, members: [...group.members, p.name] };
    }
  }
  return { ...inbound, groups };
}
