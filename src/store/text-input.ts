// Text a user types that reaches the store: PostgreSQL cannot hold a NUL in text (nor \u0000 in
// jsonb) and refuses the whole statement, which would read as the store being down. Such input is
// refused by name before any query, the same way on both backends.
import { FaxgateError } from "../errors.js";

/** A C0 control character other than tab, line feed and carriage return, or DEL. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Throws a USAGE error naming `field` when `value` holds a control character (NUL included). */
export function refuseControlCharacters(field: string, value: string | undefined): void {
  if (value === undefined) return;
  const m = CONTROL.exec(value);
  if (!m) return;
  const code = `U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
  throw new FaxgateError(
    "USAGE",
    `${field}: contains a control character (${code}${code === "U+0000" ? ", NUL" : ""}); remove it and try again`,
    { httpStatus: 400 },
  );
}
