// The commands on the fax service account: keys, webhooks, contacts, the service's history and downloads.
import { type Command, Option } from "commander";
import { configOption, isoDate, jsonOption, load, userOption, wholeNumber } from "./options.js";

/** keys, webhooks, contacts, history, download */
export function accountCommands(program: Command): void {
  keyCommands(program);
  webhookCommands(program);
  contactCommands(program);
  serviceFaxCommands(program);
}

function keyCommands(program: Command): void {
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
}

function webhookCommands(program: Command): void {
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
}

function contactCommands(program: Command): void {
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
}

/** the faxes the service keeps: its history and their PDFs */
function serviceFaxCommands(program: Command): void {
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
}
