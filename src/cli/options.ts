// What the command groups (commands-*.ts) share: the options every command takes, the parsers
// that turn a bad value into a usage error (exit 2), and the lazily loaded command code.
import { InvalidArgumentError, Option } from "commander";
import { parseIsoTime } from "../ledger/filter.js";
import { JOB_STATES, RECIPIENT_STATES } from "../store/types.js";

// Each command's code is loaded when that command runs: `faxgate jobs` must not pay for the SMTP
// server, the PDF libraries and the web console (over a second of start-up on this hardware).
export const load = {
  address: () => import("./address.js"),
  apiCommands: () => import("./api-commands.js"),
  audit: () => import("./audit.js"),
  directory: () => import("./directory.js"),
  evidence: () => import("./evidence.js"),
  jobs: () => import("./jobs.js"),
  factors: () => import("./factors.js"),
  legalHold: () => import("./legal-hold.js"),
  deliveries: () => import("./deliveries.js"),
  send: () => import("./send.js"),
  opsCommands: () => import("./ops-commands.js"),
  start: () => import("./start.js"),
  storeCommands: () => import("./store-commands.js"),
  webhooks: () => import("./webhooks.js"),
};

/** Every state `faxgate jobs --state` accepts: a job's or a recipient's. */
export const LISTABLE_STATES: readonly string[] = [...new Set<string>([...JOB_STATES, ...RECIPIENT_STATES])];

export const collect = (v: string, prev: string[]) => [...prev, v];

/** A whole number in [min, max], or a usage error (exit 2) that says what was expected. */
export function wholeNumber(min: number, max: number) {
  return (v: string): number => {
    const n = /^\s*\d+\s*$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}, got "${v}"`);
    return n;
  };
}

/** An ISO 8601 date or date-time, as the service wants it; anything else is a usage error. */
export function isoDate(v: string): string {
  const t = parseIsoTime(v);
  if (t === null)
    throw new InvalidArgumentError(
      `expected an ISO 8601 date or date-time such as 2026-12-31 or 2026-12-31T23:59:00Z, got "${v}"`,
    );
  return t;
}
/** An IANA time zone name the runtime knows, e.g. "Europe/Berlin". */
export function timeZoneName(v: string): string {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: v });
    return v;
  } catch {
    throw new InvalidArgumentError(`expected an IANA time zone such as "America/New_York", got "${v}"`);
  }
}
export const configOption = () =>
  new Option("-c, --config <file>", "config file (default: $FAXGATE_CONFIG, else the built-in sandbox)");
export const jsonOption = () => new Option("--json", "print JSON");
export const userOption = () =>
  new Option("-u, --user <name>", "configured user (name or e-mail) whose key is used (default: the first)");
