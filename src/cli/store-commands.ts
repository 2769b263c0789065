// `faxgate store migrate`: the SQLite queue in `data` into PostgreSQL (docs/ha.md). The target is
// --to, else the config's `database`; its password is never printed.
import { databaseUrlProblem } from "../config/url-secrets.js";
import { FaxgateError } from "../errors.js";
import { migrateSqliteToPostgres, redactDatabaseUrl } from "../store/open.js";
import { loadContext, printJson, type GlobalOptions } from "./context.js";

/** The tables copied beside the queue's own, as the counts name them. */
const MORE = [
  ["receivedFaxes", "received faxes"],
  ["receivedEvents", "received fax events"],
  ["receivedText", "received fax texts"],
  ["deliveries", "connector deliveries"],
  ["sentText", "sent fax texts"],
  ["signedUses", "signed mail uses"],
  ["servicePurges", "service purges"],
  ["signInFactors", "sign-in factors"],
  ["personKeys", "person keys"],
  ["directoryEntries", "directory entries"],
] as const;

export async function storeMigrateCommand(opts: GlobalOptions & { to?: string; json?: boolean }): Promise<void> {
  const ctx = loadContext(opts);
  const url = opts.to ?? ctx.config.database;
  if (!url)
    throw new FaxgateError(
      "USAGE",
      "store migrate needs a PostgreSQL URL: --to postgres://user@host/db, or `database:` in the config",
      { field: "database" },
    );
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new FaxgateError(
      "USAGE",
      `--to must be a PostgreSQL URL (postgres://…), got ${JSON.stringify(redactDatabaseUrl(url))}`,
    );
  // the same reading as database: in the config (a raw "@" or "/" in the password would connect elsewhere)
  const problem = databaseUrlProblem(url);
  if (problem) throw new FaxgateError("USAGE", `--to ${JSON.stringify(redactDatabaseUrl(url))}: ${problem}`);
  const shown = redactDatabaseUrl(url);
  if (!opts.json) process.stderr.write(`copying the queue in ${ctx.config.data} to ${shown}\n`);
  const report = await migrateSqliteToPostgres({ dataDir: ctx.config.data, url });
  if (opts.json) {
    printJson({ from: ctx.config.data, to: shown, ...report, verified: true });
    return;
  }
  const s = report.source;
  const c = report.copied;
  const more = (n: typeof s): string => MORE.map(([k, label]) => `${n[k]} ${label}`).join(", ");
  process.stdout.write(
    `source: ${s.jobs} jobs, ${s.recipients} recipients, ${s.documents} documents, ${s.events} events, ${s.notifications} notifications, ${s.kv} state keys, ${s.ledger} ledger rows, ${s.holds} legal holds\n` +
      `copied: ${c.jobs} jobs, ${c.recipients} recipients, ${c.documents} documents, ${c.events} events, ${c.notifications} notifications, ${c.kv} state keys, ${c.ledger} ledger rows, ${c.holds} legal holds` +
      `${report.alreadyThere ? ` (${report.alreadyThere} jobs were there already)` : ""}\n` +
      `source also: ${more(s)}\n` +
      `copied also: ${more(c)}\n` +
      (report.receivedUnderOtherId
        ? `joined: ${report.receivedUnderOtherId} received faxes PostgreSQL held under another id took their texts and events; ${report.skipped.deliveries ?? 0} of their connector deliveries left out (docs/ha.md)\n`
        : "") +
      report.holdAgain
        .map(
          (h) =>
            `hold again: received fax ${h.heldId} is held here but the fleet keeps it as ${h.fleetId}: faxgate legal-hold add --received ${h.fleetId} --reason ...\n`,
        )
        .join("") +
      `verified: every row of the SQLite queue is in ${shown}\n`,
  );
}
