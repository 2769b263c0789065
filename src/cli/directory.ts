// `faxgate directory sync`: the LDAP directory read now, from this process (so the operator sees
// what it found and why it was refused), stored as the last good list, and the running daemon
// told (SIGHUP) to take it. With --accept-drop an operator applies a drop the daemon refused.
import os from "node:os";
import { systemClock } from "../clock.js";
import { DirectorySync, syncRefused } from "../directory/directory-sync.js";
import { LdapSource } from "../directory/ldap-source.js";
import { mergePeople } from "../directory/merge.js";
import { storedPeople } from "../directory/stored-people.js";
import { PersonKeys } from "../store/sql/person-keys.js";
import { FaxgateError } from "../errors.js";
import { silentLogger } from "../log/logger.js";
import { createLedger } from "../parts/ledger.js";
import { signalDaemon } from "./api-commands.js";
import { type GlobalOptions, loadContext, printJson, withStore } from "./context.js";

export async function directorySyncCommand(opts: GlobalOptions & { acceptDrop?: boolean }): Promise<void> {
  const ctx = loadContext(opts, true);
  const d = ctx.config.directory;
  if (!d?.ldap)
    throw new FaxgateError("USAGE", "no directory.ldap in the config: there is nothing to sync (SCIM pushes)", {
      field: "directory.ldap",
    });
  const ldap = d.ldap;
  const outcome = await withStore(ctx, async (store) => {
    const sync = new DirectorySync({
      source: new LdapSource(ldap),
      store,
      ledger: createLedger(ctx.config, store),
      clock: systemClock,
      // the outcome is printed below; the sync's own log lines would say it twice
      logger: silentLogger(),
      maxDrop: d.maxDrop,
      door: "cli",
    });
    await sync.loadStored();
    return sync.sync({ acceptDrop: opts.acceptDrop, by: os.userInfo().username });
  });
  if (opts.json) printJson(outcome);
  else {
    process.stdout.write(
      `${outcome.people} people, ${outcome.groups} groups read: ${outcome.added} added, ${outcome.removed} removed\n`,
    );
    for (const s of outcome.skipped) process.stdout.write(`skipped ${s.id}: ${s.reason}\n`);
  }
  if (!outcome.applied) throw syncRefused(outcome);
  signalDaemon(ctx.config.data);
}

/**
 * `faxgate directory map <person> <serviceUserId>`: the fax service's user id of a directory
 * person whose directory lacks it, kept in the store; the daemon (told by SIGHUP) mints their key.
 */
export async function directoryMapCommand(person: string, serviceUserId: string, opts: GlobalOptions): Promise<void> {
  const ctx = loadContext(opts, true);
  const d = ctx.config.directory;
  if (!d) throw new FaxgateError("USAGE", "no directory: in the config: map people of users: with their apiKey");
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(serviceUserId))
    throw new FaxgateError(
      "USAGE",
      "the service user id must be the service's user id (a uuid), letters, digits, - . _",
    );
  const known = await withStore(ctx, async (store) => {
    const people = mergePeople(ctx.config.users, await storedPeople(store, d)).users;
    const p = people.find((u) => u.name.toLowerCase() === person.toLowerCase());
    if (!p) return null;
    await new PersonKeys(store.sql).map(p.name, serviceUserId);
    return p.name;
  });
  if (!known)
    throw new FaxgateError(
      "USAGE",
      `no person "${person.slice(0, 64)}" in the directory's stored list; nothing was mapped`,
    );
  process.stdout.write(`${known} mapped to service user ${serviceUserId}\n`);
  signalDaemon(ctx.config.data);
}

/** Doctor: the directory's people who cannot fax because no one knows their service user id. */
export async function unmappedPeople(
  ctx: ReturnType<typeof loadContext>,
): Promise<{ people: string[]; mapped: number } | null> {
  const d = ctx.config.directory;
  if (!d?.keys) return null;
  return withStore(ctx, async (store) => {
    const people = mergePeople(ctx.config.users, await storedPeople(store, d)).users;
    const rows = new Map((await new PersonKeys(store.sql).all()).map((r) => [r.user, r]));
    const keyless = people.filter((u) => u.apiKey === "");
    const unmapped = keyless.filter((u) => !u.serviceUserId && !rows.get(u.name)?.mappedUserId).map((u) => u.name);
    return { people: unmapped, mapped: keyless.length - unmapped.length };
  });
}
