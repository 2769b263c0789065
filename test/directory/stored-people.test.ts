// What `config check` reads to say which directory people a users: entry wins over: the LDAP
// sync's stored list and the SCIM users in the store, merged after the config's users.
import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { LDAP_LIST_KEY } from "../../src/directory/directory-sync.js";
import { mergePeople } from "../../src/directory/merge.js";
import { storedPeople } from "../../src/directory/stored-people.js";
import { writeDirectoryEntry } from "../../src/store/sql/directory.js";
import { tempStore } from "../helpers/store.js";

describe("stored directory people", () => {
  it("are read from both sources, and a config user shadows one by name and one by address", async () => {
    const temp = tempStore();
    try {
      const config = configSchema.parse({
        api: { baseUrl: "https://fax.example.test" },
        users: [{ name: "alice", email: "alice@example.com", apiKey: "k" }],
        directory: {
          ldap: { url: "ldaps://dc", bindDn: "cn=x", bindPassword: "p", base: "dc=x" },
          scim: { token: "t".repeat(32) },
        },
      });
      const ldapAlice = {
        source: "ldap",
        id: "uid=alice",
        name: "alice",
        email: "a2@example.com",
        aliases: [],
        role: "user",
        inbox: [],
      };
      const ldapHal = {
        source: "ldap",
        id: "uid=hal",
        name: "hal",
        email: "hal@example.com",
        aliases: [],
        role: "user",
        inbox: [],
      };
      await temp.store.setState(LDAP_LIST_KEY, JSON.stringify({ at: "x", people: [ldapAlice, ldapHal] }));
      await writeDirectoryEntry(
        temp.store.sql,
        "user",
        "u1",
        () => ({
          name: "al@contoso.com",
          externalId: null,
          body: { userName: "al@contoso.com", emails: [{ value: "alice@example.com" }] },
        }),
        () => new Error("taken"),
      );
      const people = await storedPeople(temp.store, config.directory!);
      expect(people.map((p) => `${p.source}:${p.name}`)).toEqual(["ldap:alice", "ldap:hal", "scim:al"]);
      const { users, shadowed } = mergePeople(config.users, people);
      expect(users.map((u) => u.name)).toEqual(["alice", "hal"]);
      expect(shadowed.map((s) => [s.person.name, s.by, s.why])).toEqual([
        ["alice", "alice", "name"],
        ["al", "alice", "address"],
      ]);
    } finally {
      temp.cleanup();
    }
  });
});
