// The compliance ledger, built once: on the queue's database, with the number key from the
// secrets file (or the environment), else (SQLite only) the data folder's own (ledger/number-key.ts).
import { type Config, readSecretsFile } from "../config/index.js";
import { describeError } from "../errors.js";
import { LEDGER_KEY_NAME, ledgerNumberKey, SqlLedger } from "../ledger/index.js";
import type { Logger } from "../log/index.js";
import type { QueueStore } from "../store/index.js";
import type { Part } from "./part.js";

/** FAXGATE_LEDGER_KEY as the secrets file gives it (its values win, as in config loading), else the environment. */
export function givenLedgerKey(config: Config): string | undefined {
  const fromFile = config.secretsFile ? readSecretsFile(config.secretsFile)[LEDGER_KEY_NAME] : undefined;
  return fromFile ?? process.env[LEDGER_KEY_NAME];
}

/** The daemon's ledger: a missing key is made (SQLite) or refuses the start (PostgreSQL). */
export function createLedger(
  config: Config,
  store: QueueStore,
  opts: { create: boolean; log?: Logger } = { create: true },
): SqlLedger {
  const key = ledgerNumberKey({
    dataDir: config.data,
    shared: store.backend === "postgres",
    given: givenLedgerKey(config),
    create: opts.create,
  });
  // a CLI's rows the running gateways seal (their sweep) if its own pass does not finish
  return new SqlLedger(store.sql, key, (err) =>
    opts.log?.warn({ err: describeError(err) }, "could not seal the ledger's pending rows; tried again shortly"),
  );
}

/**
 * The sealing of PostgreSQL's pending ledger rows (ledger/sealer.ts): its sweep runs while the
 * gateway does, first in the list so that it stops last, after a final pass for the doors' rows.
 */
export function ledgerSealPart(ledger: SqlLedger): Part {
  return {
    name: "ledger-seal",
    start: () => ledger.sealer.start(),
    stop: () => ledger.sealer.stop(),
  };
}

/**
 * A ledger for the CLI, which only reads: no key is made, and a PostgreSQL gateway's key is needed
 * only to look a number up (`audit export --number`).
 */
export function readingLedger(config: Config, store: QueueStore, needNumbers: boolean): SqlLedger {
  const key = ledgerNumberKey({
    dataDir: config.data,
    shared: store.backend === "postgres" && needNumbers,
    given: givenLedgerKey(config),
    create: false,
  });
  return new SqlLedger(store.sql, key);
}
