// Groups to what they mean here: a role (admin wins) and inbox memberships. The same rule for an
// LDAP group's DN and a SCIM group's displayName; DNs compare without regard to case or the
// spaces after commas, as directories write them either way.
export interface GroupMap {
  roles: Readonly<Record<string, "user" | "admin">>;
  inbox: Readonly<Record<string, string | readonly string[]>>;
}

export const groupKey = (g: string): string =>
  g
    .toLowerCase()
    .replace(/\s*,\s*/g, ",")
    .trim();

export function groupMeaning(map: GroupMap, groups: readonly string[]): { role: "user" | "admin"; inbox: string[] } {
  const roles = new Map(Object.entries(map.roles).map(([g, r]) => [groupKey(g), r]));
  const inboxes = new Map(Object.entries(map.inbox).map(([g, i]) => [groupKey(g), typeof i === "string" ? [i] : i]));
  let role: "user" | "admin" = "user";
  const inbox = new Set<string>();
  for (const g of groups) {
    const k = groupKey(g);
    if (roles.get(k) === "admin") role = "admin";
    for (const i of inboxes.get(k) ?? []) inbox.add(i);
  }
  return { role, inbox: [...inbox].sort() };
}
