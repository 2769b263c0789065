// The PostgreSQL connection string as faxgate shows it (password masked), and what a pg error
// means to the rest of the gateway: trouble reaching the database is STORE_UNAVAILABLE and
// temporary (SMTP answers 451, dispatch tries again later), never a crash.
import { maskUrl } from "../../config/index.js";
import { FaxgateError, isFaxgateError } from "../../errors.js";

/** `postgres://user:secret@host/db` → `postgres://user:***@host/db`, by parsing (config/url-secrets.ts). */
export function redactDatabaseUrl(url: string): string {
  return maskUrl(url);
}

/** Removes every appearance of `secret` (a password) from a message, in case a driver echoes it. */
export function scrub(message: string, secrets: readonly string[]): string {
  let out = message;
  for (const s of secrets) if (s) out = out.split(s).join("***");
  return out;
}

/** SQLSTATEs worth trying the transaction again for: serialization failure, deadlock. */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "40001" || code === "40P01";
}

/** A FaxgateError as it stands; anything else becomes STORE_UNAVAILABLE (temporary). */
export function storeError(err: unknown, what: string, secrets: readonly string[]): Error {
  if (isFaxgateError(err)) return err;
  const msg = scrub((err as Error)?.message ?? String(err), secrets);
  return new FaxgateError(
    "STORE_UNAVAILABLE",
    `${what}: the PostgreSQL queue store is not reachable or refused the change (${msg})`,
    // the driver's error stays as the cause: its code (28P01, ECONNREFUSED...) tells a wrong
    // password from a wrong address (doctor); its message holds no password
    { temporary: true, cause: err },
  );
}
