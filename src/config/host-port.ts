// "127.0.0.1:2525", "[::1]:25", "0.0.0.0:25": the one parser for every listen address (smtp.listen,
// admin.listen, web.listen, dns.servers, --listen of the emulator, --smtp-listen), so they all accept
// the same forms; the config schema checks them with it too.
import { FaxgateError, type ErrorCode } from "../errors.js";

/** `what` names the config key or option in the error, e.g. "smtp.listen" or "--listen". */
export function parseHostPort(
  value: string,
  what: string,
  code: ErrorCode = "CONFIG_INVALID",
): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new FaxgateError(code, `${what} must be HOST:PORT with a port up to 65535, got "${value}"`, { field: what });
  }
  return { host: (m[1] ?? m[2])!, port };
}

/** For a schema's check: true when parseHostPort takes it. */
export function isHostPort(value: string): boolean {
  try {
    parseHostPort(value, "address");
    return true;
  } catch {
    return false;
  }
}
