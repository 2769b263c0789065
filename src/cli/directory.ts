// `faxgate directory sync`: the LDAP directory read now, from this process (so the operator sees
// what it found and why it was refused), stored as the last good list, and the running daemon
// told (SIGHUP) to take it. With --accept-drop an operator applies a drop the daemon refused.
import os from "node:os";
import { systemClock } from "../clock.js";
import { DirectorySync, syncRefused } from "../directory/directory-sync.js";
import { LdapSource } from "../directory/ldap-source.js";
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
