// The commands that run and set up the gateway itself: the daemon, the emulator, config, doctor,
// the store and password hashes.
import { type Command, Option } from "commander";
import { registerEmulatorCommand } from "./emulator-command.js";
import { collect, configOption, jsonOption, load } from "./options.js";

/** start, emulator */
export function runCommands(program: Command): void {
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
}

/** config check, doctor, store migrate, reload, passwd */
export function setupCommands(program: Command): void {
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
      "copy the SQLite queue in `data` (every job, document, event, notification and state key) into PostgreSQL; rerun it to copy what is missing (events added since; a received fax the fleet holds already is joined, docs/ha.md); refused while the daemon runs",
    )
    .option("--to <url>", "postgres://user@host/db (default: the config's database)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.storeCommands()).storeMigrateCommand(o));

  program
    .command("reload")
    .description(
      "tell the running daemon to load its config again (as SIGHUP does); a ledger row says who asked (exit 1: no daemon runs)",
    )
    .addOption(configOption())
    .action(async (o) => {
      process.exitCode = await (await load.opsCommands()).reloadCommand(o);
    });

  program
    .command("passwd")
    .description(
      "read a password (asked twice at a terminal, or the first line of stdin) and print its hash for users[].password",
    )
    .addOption(configOption())
    .action(async () => (await load.opsCommands()).passwdCommand());
}
