// The directory's people as the store holds them (the LDAP sync's last good list, the SCIM users),
// for the CLI: `config check` says which of them a users: entry shadows.
import type { DirectoryConfig } from "../config/index.js";
import type { Db, QueueStore } from "../store/index.js";
import { LDAP_LIST_KEY } from "./directory-sync.js";
import type { DirectoryPerson } from "./person.js";
import { ScimDirectory } from "./scim-directory.js";

export async function storedPeople(
  store: Pick<QueueStore, "getState"> & { sql: Db },
  d: DirectoryConfig,
): Promise<DirectoryPerson[]> {
  const raw = d.ldap ? await store.getState(LDAP_LIST_KEY) : null;
  const ldap = raw ? (JSON.parse(raw) as { people: DirectoryPerson[] }).people : [];
  const scim = d.scim
    ? await new ScimDirectory({
        db: store.sql,
        // reading only: nothing is recorded or changed
        ledger: {
          record: async () => undefined,
          recordAll: async () => undefined,
          rows: async () => [],
          rowsFor: () => [],
          sealSoon: () => undefined,
        },
        config: d.scim,
        changed: async () => undefined,
      }).people()
    : [];
  return [...ldap, ...scim];
}
