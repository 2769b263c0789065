// Connector deliveries of received faxes (docs/connectors.md): what is queued, what failed, and
// "deliver again" once the cause is fixed.
import type { Command } from "commander";
import { configOption, jsonOption, load } from "./options.js";

export function deliveriesCommands(program: Command): void {
  const d = program
    .command("deliveries")
    .description("received faxes' deliveries to FHIR, HL7, WebDAV and SMB connectors");
  d.command("list", { isDefault: true })
    .description("deliveries, newest first")
    .option("--state <state>", "only pending, delivering, delivered or failed ones")
    .option("--received <id>", "only this received fax's")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.deliveries()).deliveriesListCommand(o));
  d.command("again")
    .description("deliver a failed delivery again now (the running gateway takes it at its next pass)")
    .argument("<id>", "the delivery's id (deliveries list)")
    .option("--by <operator>", "who asks (default: the login name)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (id: string, o) => (await load.deliveries()).deliverAgainCommand(id, o));
}
