// People from the office's directory (docs/identity.md).
import type { Command } from "commander";
import { configOption, jsonOption, load } from "./options.js";

export function directoryCommands(program: Command): void {
  const dir = program.command("directory").description("people from LDAP / Active Directory and SCIM");
  dir
    .command("sync")
    .description("read the LDAP directory now, store the list and tell the running daemon (SIGHUP)")
    .option("--accept-drop", "apply a sync that removes more people than directory.maxDrop allows")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => (await load.directory()).directorySyncCommand(o));
  dir
    .command("map <person> <serviceUserId>")
    .description("the fax service's user id of a person the directory gives none (their key is then minted)")
    .addOption(configOption())
    .action(async (person: string, id: string, o) => (await load.directory()).directoryMapCommand(person, id, o));
}
