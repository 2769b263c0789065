// The compliance ledger, built once: on the queue's database, with the number key from the
// secrets file (or the environment), else (SQLite only) the data folder's own (ledger/number-key.ts).
import { type Config, readSecretsFile } from "../config/index.js";
import { LEDGER_KEY_NAME, ledgerNumberKey, SqlLedger } from "../ledger/index.js";
import type { QueueStore } from "../store/index.js";

/** FAXGATE_LEDGER_KEY as the secrets file gives it (its values win, as in config loading), else the environment. */
export function givenLedgerKey(config: Config): string | undefined {
  const fromFile = config.secretsFile ? readSecretsFile(config.secretsFile)[LEDGER_KEY_NAME] : undefined;
  return fromFile ?? process.env[LEDGER_KEY_NAME];
}

/** The daemon's ledger: a missing key is made (SQLite) or refuses the start (PostgreSQL). */
export function createLedger(
  config: Config,
  store: QueueStore,
  opts: { create: boolean } = { create: true },
): SqlLedger {
  const key = ledgerNumberKey({
    dataDir: config.data,
    shared: store.backend === "postgres",
    given: givenLedgerKey(config),
    create: opts.create,
  });
  return new SqlLedger(store.sql, key);
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
