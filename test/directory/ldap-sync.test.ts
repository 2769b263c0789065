// The LDAP source against a private slapd: people with their aliases, service id and groups,
// paged reads, TLS both ways, and the sync's two refusals: an unreachable directory and a sudden
// drop keep the last good list.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { DirectorySync } from "../../src/directory/directory-sync.js";
import { LdapSource } from "../../src/directory/ldap-source.js";
import { silentLogger } from "../../src/log/logger.js";
import { testLedger } from "../helpers/ledger.js";
import { BIND_PW, groupLdif, ldapConfig, personLdif, type Slapd, slapdMissing, startSlapd } from "../helpers/slapd.js";
import { type TempStore, tempStore } from "../helpers/store.js";

const missing = slapdMissing();

/** The source as these tests read it: two a page, the AD attributes, two groups mapped. */
function sourceConfig(s: Slapd, over: Record<string, unknown> = {}) {
  return ldapConfig(s, {
    pageSize: 2,
    attributes: { serviceUserId: "faxServiceUserId", disabled: "userAccountControl" },
    groups: {
      base: s.groupsBase,
      roles: { [s.groupDn("fax admins").toUpperCase()]: "admin" },
      inbox: { [s.groupDn("billing")]: "billing" },
    },
    ...over,
  });
}

describe.skipIf(missing)(`LDAP source${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let slapd: Slapd;
  let temp: TempStore;

  beforeAll(async () => {
    slapd = await startSlapd();
    const p = slapd.peopleBase;
    slapd.add(
      personLdif(p, {
        uid: "ann",
        mail: ["ann@example.com", "a.smith@example.com"],
        cn: "Ann Smith",
        proxyAddresses: ["SMTP:ann@example.com", "smtp:ann.smith@example.org", "X500:/o=Example/cn=ann"],
        serviceUserId: "svc-ann",
      }) +
        personLdif(p, { uid: "bob", mail: "bob@example.com" }) +
        personLdif(p, { uid: "cy", mail: "cy@example.com", disabled: true }) +
        personLdif(p, { uid: "dee", mail: "dee@example.com" }) +
        personLdif(p, { uid: "no-mail-here", mail: [] }).replace(/^mail:.*\n/gm, "") +
        groupLdif(slapd.groupsBase, "fax admins", [slapd.dnOf("ann")]) +
        groupLdif(slapd.groupsBase, "billing", [slapd.dnOf("ann"), slapd.dnOf("bob")]),
    );
  }, 60_000);
  afterAll(async () => {
    await slapd?.dispose();
  });

  it("reads people page by page over ldaps, with aliases, service id, role and inboxes", async () => {
    const read = await new LdapSource(sourceConfig(slapd)).read();
    const byName = Object.fromEntries(read.people.map((p) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(["ann", "bob", "dee"]);
    expect(byName.ann).toMatchObject({
      email: "ann@example.com",
      aliases: ["a.smith@example.com", "ann.smith@example.org"],
      displayName: "Ann Smith",
      serviceUserId: "svc-ann",
      role: "admin",
      inbox: ["billing"],
    });
    expect(byName.bob).toMatchObject({ role: "user", inbox: ["billing"] });
    expect(byName.dee).toMatchObject({ role: "user", inbox: [] });
    expect(read.groups).toBe(2);
    expect(read.skipped.map((s) => s.reason).sort()).toEqual(["no usable mail", "the account is disabled"]);
  });

  it("reads over StartTLS too, and refuses a certificate it was not told to trust", async () => {
    const read = await new LdapSource(sourceConfig(slapd, { url: slapd.ldapUrl, startTls: true })).read();
    expect(read.people).toHaveLength(3);
    await expect(new LdapSource(sourceConfig(slapd, { caFile: undefined })).read()).rejects.toThrow(
      /DIRECTORY_UNAVAILABLE|certificate/,
    );
  });

  it("keeps the last good list through an outage, and refuses a drop past maxDrop until accepted", async () => {
    temp = tempStore();
    const ledger = testLedger(temp.store);
    const make = (config = sourceConfig(slapd)) =>
      new DirectorySync({
        source: new LdapSource(config),
        store: temp.store,
        ledger,
        clock: systemClock,
        logger: silentLogger(),
        maxDrop: 0.25,
        door: "gateway",
      });
    try {
      const sync = make();
      const first = await sync.sync();
      expect(first).toMatchObject({ applied: true, people: 3, added: 3, removed: 0 });

      // the directory is away: nothing changes, and the state says so
      await slapd.stop();
      const failed = await sync.sync();
      expect(failed.applied).toBe(false);
      expect(failed.problem).toMatch(/DIRECTORY_UNAVAILABLE.*the last good list \(3 people\) stays/);
      expect(sync.people()).toHaveLength(3);
      expect(sync.state()).toMatchObject({ ok: false, people: 3 });
      // a gateway started meanwhile starts from the stored list
      const restarted = make();
      expect(await restarted.loadStored()).toBe(true);
      expect(
        restarted
          .people()
          .map((p) => p.name)
          .sort(),
      ).toEqual(["ann", "bob", "dee"]);
      await slapd.start();

      // a filter that suddenly matches one person of three: two thirds would go
      const narrow = make(sourceConfig(slapd, { filter: "(uid=ann)" }));
      await narrow.loadStored();
      const dropped = await narrow.sync();
      expect(dropped.applied).toBe(false);
      expect(dropped.problem).toMatch(/2 of 3 would be removed.*--accept-drop/);
      expect(narrow.people()).toHaveLength(3);
      const accepted = await narrow.sync({ acceptDrop: true, by: "root" });
      expect(accepted).toMatchObject({ applied: true, people: 1, removed: 2 });

      // one row per sync, applied or not, with why
      const rows = await ledger.rows();
      const syncs = rows.filter((r) => r.action === "directory-sync");
      expect(syncs.map((r) => r.detail.applied)).toEqual([true, false, false, true]);
      expect(syncs[3]!.actor).toEqual({ kind: "operator", id: "root" });
      expect(JSON.stringify(syncs)).not.toContain(BIND_PW);
    } finally {
      temp.cleanup();
    }
  }, 60_000);
});
