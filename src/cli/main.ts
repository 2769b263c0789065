// The `faxgate` command (commander). Exit status: 0 success, 1 failure (a fax failed, a check
// failed, the service refused), 2 bad usage or invalid config (the message names the key).
// The commands are declared by group (commands-*.ts); this file builds the program and runs it.
import { Command, CommanderError } from "commander";
import { FaxgateError } from "../errors.js";
import { accountCommands } from "./commands-account.js";
import { auditCommands } from "./commands-audit.js";
import { directoryCommands } from "./commands-directory.js";
import { evidenceCommands } from "./commands-evidence.js";
import { factorCommands } from "./commands-factors.js";
import { legalHoldCommands } from "./commands-legal-hold.js";
import { deliveriesCommands } from "./commands-deliveries.js";
import { queueCommands } from "./commands-queue.js";
import { runCommands, setupCommands } from "./commands-service.js";

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

  runCommands(program);
  queueCommands(program);
  accountCommands(program);
  evidenceCommands(program);
  setupCommands(program);
  auditCommands(program);
  legalHoldCommands(program);
  deliveriesCommands(program);
  factorCommands(program);
  directoryCommands(program);
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
