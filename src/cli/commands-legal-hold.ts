// Legal holds (docs/compliance.md): not `faxgate hold`, which keeps a job from being sent.
import type { Command } from "commander";
import { configOption, jsonOption, load } from "./options.js";

export function legalHoldCommands(program: Command): void {
  const lh = program
    .command("legal-hold")
    .description("keep faxes from the retention rule, here and at the service, until released (operator)");
  lh.command("add")
    .description("hold every copy of one user's, number's, job's, received fax's or matter's faxes")
    .option("--user <name>", "a configured user's sent and received faxes")
    .option("--number <e164>", "faxes sent to or received from this number")
    .option("--job <id>", "one sent fax")
    .option("--received <id>", "one received fax (the gateway's id)")
    .option("--matter <tag>", "sent faxes tagged with this matter")
    .requiredOption("--reason <text>", "why (kept with the hold and in the ledger)")
    .option("--by <operator>", "who holds (default: the login name)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.legalHold()).holdAddCommand(o));
  lh.command("list")
    .description("active legal holds")
    .option("--all", "released ones too")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.legalHold()).holdListCommand(o));
  lh.command("release")
    .description("release a hold: what it held follows the retention rule again")
    .argument("<id>", "the hold's id (legal-hold list)")
    .requiredOption("--reason <text>", "why (kept in the ledger's hold-released row)")
    .option("--by <operator>", "who releases (default: the login name)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (id: string, o) => (await load.legalHold()).holdReleaseCommand(id, o));
}
