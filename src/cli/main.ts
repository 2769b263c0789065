// The `faxgate` command (commander). Exit status: 0 success, 1 failure (a fax failed, a check
// failed, the service refused), 2 bad usage or invalid config (the message names the key).
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { registerEmulatorCommand } from "../emulator/command.js";
import { FaxgateError } from "../errors.js";
import { JOB_STATES, RECIPIENT_STATES } from "../store/types.js";

// Each command's code is loaded when that command runs: `faxgate jobs` must not pay for the SMTP
// server, the PDF libraries and the web console (over a second of start-up on this hardware).
const load = {
  address: () => import("./address.js"),
  apiCommands: () => import("./api-commands.js"),
  jobs: () => import("./jobs.js"),
  send: () => import("./send.js"),
  opsCommands: () => import("./ops-commands.js"),
  start: () => import("./start.js"),
  storeCommands: () => import("./store-commands.js"),
  webhooks: () => import("./webhooks.js"),
};

/** Every state `faxgate jobs --state` accepts: a job's or a recipient's. */
const LISTABLE_STATES: readonly string[] = [...new Set<string>([...JOB_STATES, ...RECIPIENT_STATES])];

const collect = (v: string, prev: string[]) => [...prev, v];

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
  const t = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v.trim())
    ? Date.parse(v.trim())
    : Number.NaN;
  if (Number.isNaN(t))
    throw new InvalidArgumentError(
      `expected an ISO 8601 date or date-time such as 2026-12-31 or 2026-12-31T23:59:00Z, got "${v}"`,
    );
  return new Date(t).toISOString();
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
const configOption = () =>
  new Option("-c, --config <file>", "config file (default: $FAXGATE_CONFIG, else the built-in sandbox)");
const jsonOption = () => new Option("--json", "print JSON");
const userOption = () =>
  new Option("-u, --user <name>", "configured user (name or e-mail) whose key is used (default: the first)");

export function buildProgram(): Command {
  const program = new Command("faxgate")
    .description(
      "E-mail-to-fax and print-to-fax gateway for a cloud fax service.\nWith no config it runs in sandbox mode against an embedded emulator of the service.",
    )
    .version(process.env.npm_package_version ?? "0.1.0")
    .showHelpAfterError("(run with --help for usage)")
    // Before any subcommand is added, so that every one inherits it: a usage error (unknown option,
    // missing argument, bad choice) throws a CommanderError that run() turns into exit 2.
    .exitOverride();

  program
    .command("start")
    .description("run the gateway (SMTP listener, spool watcher, dispatcher, notifier)")
    .addOption(configOption())
    .addOption(
      new Option("--delay-ms <n>", "sandbox only: how long the emulated service keeps a fax processing")
        .argParser(Number)
        .default(2000),
    )
    .option("--smtp-listen <host:port>", "listen here instead of smtp.listen (repeatable)", collect, [])
    .option("--admin-listen <host:port>", "serve /healthz and /metrics here instead of admin.listen")
    .option("--web-listen <host:port>", "serve the web console here instead of web.listen")
    .action(async (o) =>
      (await load.start()).startCommand({
        config: o.config,
        delayMs: o.delayMs,
        smtpListen: o.smtpListen,
        adminListen: o.adminListen,
        webListen: o.webListen,
      }),
    );

  registerEmulatorCommand(program);

  program
    .command("send")
    .description("fax files from the command line, through the same queue as mail and print")
    .argument(
      "[files...]",
      "documents (PDF, TIFF, PNG, JPEG, text; office documents are converted to PDF with LibreOffice) in the order they are faxed",
    )
    .requiredOption("-t, --to <number>", "fax number (repeatable, or comma-separated)", collect, [])
    .option("--cover", "add a cover page")
    .option("-s, --subject <text>", "cover page subject (max 55 characters)")
    .option("-n, --notes <text>", "cover page notes (max 4000 characters)")
    .addOption(userOption())
    .option("-w, --wait", "show progress until the fax is delivered or failed (exit 1 if it failed)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (files: string[], o) => {
      process.exitCode = await (await load.send()).sendCommand(files, o);
    });

  program
    .command("jobs")
    .description("list jobs, newest first")
    .addOption(
      new Option("--state <state>", "only jobs in this state, or with a recipient in this state").choices(
        LISTABLE_STATES,
      ),
    )
    .addOption(userOption())
    .addOption(new Option("--limit <n>", "at most this many").argParser(wholeNumber(1, 100_000)).default(200))
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.jobs()).jobsCommand(o));

  program
    .command("job")
    .description("show one job with its recipients")
    .argument("<id>", "job id")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (id: string, o) => (await load.jobs()).jobCommand(id, o));

  program
    .command("address")
    .description("give a print waiting for its number the number(s) to fax it to (as the console's address page)")
    .argument("<job>", 'job id (faxgate jobs shows it as "needs a number")')
    .argument("<number...>", "fax numbers or contact names")
    .option("--cover", "add a cover page")
    .option("-s, --subject <text>", "cover page subject (default: the print's title)")
    .option("-n, --notes <text>", "cover page notes (adds a cover page)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (id: string, to: string[], o) => (await load.address()).addressCommand(id, to, o));

  program
    .command("report")
    .description("write a job's transmission report (a one-page PDF, as a fax machine prints) to stdout or --out")
    .argument("<job>", "job id")
    .option("-o, --out <file>", "write the PDF to this file (default: stdout)")
    .addOption(
      new Option(
        "--tz <zone>",
        "IANA time zone of the report's times (default: the account's, else this system's)",
      ).argParser(timeZoneName),
    )
    .addOption(configOption())
    .action(async (id: string, o) => (await load.jobs()).reportCommand(id, o));

  const ops: Array<["retry" | "cancel" | "hold" | "release", string]> = [
    ["retry", "send the failed, cancelled or parked recipients of a job again"],
    ["cancel", "cancel what has not been sent yet, and parked sends (faxes in flight finish)"],
    ["hold", "keep a job from being sent until released"],
    ["release", "let a held job be sent"],
  ];
  for (const [op, text] of ops) {
    program
      .command(op)
      .description(text)
      .argument("<id>", "job id")
      .addOption(configOption())
      .addOption(jsonOption())
      .action(async (id: string, o) => (await load.jobs()).jobOpCommand(op, id, o));
  }

  program
    .command("status")
    .description("queue counts by state, oldest job age, fax service reachability (exit 1 if unreachable)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => {
      process.exitCode = await (await load.jobs()).statusCommand(o);
    });

  const keys = program
    .command("keys")
    .description("manage API keys (every keys command needs the admin key, api.adminKey)");
  keys
    .command("list")
    .description("list keys")
    .addOption(userOption())
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.apiCommands()).keysList(o));
  keys
    .command("create")
    .description("create a key for a user (default access print_driver, the gateway's level)")
    .addOption(userOption())
    .option("--name <name>", "key name (max 128 characters)")
    .option("--access <level>", "print_driver, base or admin", "print_driver")
    .addOption(
      new Option(
        "--expires <date>",
        "expiry date or date-time (ISO 8601, e.g. 2026-12-31 or 2026-12-31T23:59:00Z)",
      ).argParser(isoDate),
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.apiCommands()).keysCreate(o));
  keys
    .command("delete")
    .description("delete keys")
    .argument("<ids...>", "key ids")
    .addOption(configOption())
    .action(async (ids: string[], o) => (await load.apiCommands()).keysDelete(ids, o));
  keys
    .command("rotate")
    .description(
      "replace a user's key: new key proven, written where the key lives (--write) or printed, old key deleted after the switch",
    )
    .addOption(userOption())
    .option(
      "--write",
      "write the new key where the old one is written (the config file, or the secretsFile for a ${VAR} key) and tell the running daemon to reload; checked before any key is created",
    )
    .addOption(
      new Option("--grace-seconds <n>", "with --write: wait this long before deleting the old key")
        .argParser(wholeNumber(0, 86_400))
        .default(10),
    )
    .addOption(configOption())
    .action(async (o) => (await load.apiCommands()).keysRotate(o));

  const webhooks = program
    .command("webhooks")
    .description("the service's fax events to our receiver (config key webhooks; needs api.adminKey)");
  webhooks
    .command("register")
    .description(
      "point the service at webhooks.url with the configured credentials, for all six fax events (updates an existing one)",
    )
    .option("--name <name>", "registration name", "faxgate")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.webhooks()).webhooksRegister(o));
  webhooks
    .command("list")
    .description("list registered webhooks (passwords hidden)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.webhooks()).webhooksList(o));
  webhooks
    .command("remove")
    .description("remove webhooks by id (default: the one pointing at webhooks.url)")
    .argument("[ids...]", "webhook ids")
    .addOption(configOption())
    .action(async (ids: string[], o) => (await load.webhooks()).webhooksRemove(ids, o));

  const contacts = program
    .command("contacts")
    .description(
      "a user's contacts: list uses the user's key; add, update and delete need the admin key (api.adminKey), as the users' print_driver keys may only read contacts",
    );
  contacts
    .command("list")
    .description("list contacts (the user's key)")
    .addOption(userOption())
    .option("-q, --query <text>", "search name, number, e-mail")
    .addOption(new Option("--limit <n>", "page size").argParser(wholeNumber(1, 1000)).default(100))
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.apiCommands()).contactsList(o));
  contacts
    .command("add")
    .description("create a contact for the user (needs the admin key, api.adminKey)")
    .requiredOption("--name <name>", "contact name")
    .option("--fax <number>", "fax number")
    .option("--email <address>", "e-mail")
    .option("--phone <number>", "phone number")
    .option("--organization", "create an organization")
    .option("--org <id>", "member of this organization")
    .option("--public", "visible to the whole account")
    .addOption(userOption())
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.apiCommands()).contactsAdd(o));
  contacts
    .command("update")
    .description("change a contact (needs the admin key, api.adminKey)")
    .argument("<id>", "contact id")
    .option("--name <name>", "contact name")
    .option("--fax <number>", "fax number")
    .option("--email <address>", "e-mail")
    .option("--phone <number>", "phone number")
    .addOption(userOption())
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (id: string, o) => (await load.apiCommands()).contactsUpdate(id, o));
  contacts
    .command("delete")
    .description("delete contacts (needs the admin key, api.adminKey)")
    .argument("<ids...>", "contact ids")
    .addOption(userOption())
    .addOption(configOption())
    .action(async (ids: string[], o) => (await load.apiCommands()).contactsDelete(ids, o));

  program
    .command("history")
    .description("a user's faxes at the service")
    .addOption(userOption())
    .addOption(new Option("--direction <d>", "direction").choices(["all", "inbound", "outbound"]))
    .addOption(new Option("--status <s>", "status").choices(["all", "success", "failed", "processing"]))
    .option("--from <date>", "created on or after (YYYY-MM-DD)")
    .option("--to <date>", "created on or before (YYYY-MM-DD)")
    .option("-q, --query <text>", "search numbers, CSID, message id, subject")
    .option("--archived", "archived faxes only")
    .addOption(new Option("--limit <n>", "page size (max 500)").argParser(wholeNumber(1, 500)).default(50))
    .addOption(new Option("--offset <n>", "records to skip").argParser(wholeNumber(0, Number.MAX_SAFE_INTEGER)))
    .option("--all", "walk every page")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.apiCommands()).historyCommand(o));

  program
    .command("download")
    .description("save a fax as PDF: a job's faxes (one file per recipient sent) or one message of the service")
    .argument("<id>", "job id (from `faxgate jobs`) or message id (from `faxgate history` or `faxgate job`)")
    .option(
      "-o, --output <file>",
      "where to write it (default <id>.pdf; for a job with several recipients <job>-<number>.pdf)",
    )
    .addOption(userOption())
    .addOption(configOption())
    .action(async (id: string, o) => (await load.apiCommands()).downloadCommand(id, o));

  const config = program.command("config").description("configuration");
  config
    .command("check")
    .description(
      "validate the config as the daemon loads it (with its secretsFile; every unset variable named); print it resolved, secrets masked",
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.opsCommands()).configCheckCommand(o));

  program
    .command("doctor")
    .description(
      "check secrets, folders, ports (those of the running faxgate are fine), the notification relay, the admin key and each user's key (GET /v1/me) and their expiry (exit 1 on a failure)",
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => {
      process.exitCode = await (await load.opsCommands()).doctorCommand(o);
    });

  const store = program.command("store").description("the queue itself");
  store
    .command("migrate")
    .description(
      "copy the SQLite queue in `data` (every job, document, event, notification and state key) into PostgreSQL; rerun it to copy what is missing; refused while the daemon runs",
    )
    .option("--to <url>", "postgres://user@host/db (default: the config's database)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.storeCommands()).storeMigrateCommand(o));

  program
    .command("passwd")
    .description(
      "read a password (asked twice at a terminal, or the first line of stdin) and print its hash for users[].password",
    )
    .addOption(configOption())
    .action(async () => (await load.opsCommands()).passwdCommand());

  return program;
}

export async function run(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, with exit code 0
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    if (err instanceof FaxgateError) {
      process.stderr.write(`faxgate: ${err.message}\n`);
      process.exitCode =
        err.code === "CONFIG_INVALID" || err.code === "CONFIG_NOT_FOUND" || err.code === "USAGE" ? 2 : 1;
      return;
    }
    process.stderr.write(`faxgate: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
