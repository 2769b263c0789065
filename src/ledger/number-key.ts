// The key the ledger hashes fax numbers with (HMAC-SHA256), kept out of the database so that a
// copy of the database alone cannot test guesses of a number against the ledger. Where it lives:
// FAXGATE_LEDGER_KEY in the secrets file (or the environment); a single gateway on SQLite that has
// none gets one made in its data folder (ledger.key, mode 0600) at first start. Gateways sharing a
// PostgreSQL queue must hash alike, so there a missing key refuses the start (docs/compliance.md).
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../errors.js";

export const LEDGER_KEY_NAME = "FAXGATE_LEDGER_KEY";
export const LEDGER_KEY_FILE = "ledger.key";

export interface NumberKeySource {
  /** the data folder (config `data`) */
  dataDir: string;
  /** PostgreSQL (config `database`): the key must be given, never made here */
  shared: boolean;
  /** FAXGATE_LEDGER_KEY as the secrets file or the environment gives it */
  given: string | undefined;
  /** make the data folder's key when there is none (the daemon); the CLI only reads */
  create: boolean;
}

/** The key, or null when the CLI finds none (nothing was hashed with a key yet). */
export function ledgerNumberKey(src: NumberKeySource): Buffer | null {
  if (src.given !== undefined && src.given !== "") {
    if (src.given.length < 32)
      throw new FaxgateError(
        "CONFIG_INVALID",
        `${LEDGER_KEY_NAME} is too short: give at least 32 characters (e.g. openssl rand -hex 32)`,
      );
    return Buffer.from(src.given, "utf8");
  }
  if (src.shared)
    throw new FaxgateError(
      "CONFIG_INVALID",
      `${LEDGER_KEY_NAME} is not set: gateways sharing a PostgreSQL queue must hash fax numbers in the ledger with one key; set it (e.g. openssl rand -hex 32) in the secrets file of every gateway`,
    );
  const file = path.join(src.dataDir, LEDGER_KEY_FILE);
  try {
    return Buffer.from(readFileSync(file, "utf8").trim(), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT")
      throw new FaxgateError(
        "CONFIG_INVALID",
        `cannot read the ledger key ${file}: ${(err as NodeJS.ErrnoException).code}`,
        {
          cause: err,
        },
      );
    if (!src.create) return null;
  }
  const made = randomBytes(32).toString("hex");
  try {
    // wx: two starts at once cannot each make a different key
    writeFileSync(file, `${made}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    return Buffer.from(readFileSync(file, "utf8").trim(), "utf8");
  }
  return Buffer.from(made, "utf8");
}
