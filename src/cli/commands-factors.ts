// Console sign-in factors (docs/sign-in.md): list a person's, or reset them (operator).
import type { Command } from "commander";
import { configOption, jsonOption, load } from "./options.js";

export function factorCommands(program: Command): void {
  const f = program
    .command("factors")
    .description("console sign-in factors: passkeys and authenticator apps (operator)");
  f.command("list")
    .description("a person's enrolled factors (names and dates, never a secret)")
    .argument("<person>", "a configured user's name")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (person: string, o) => (await load.factors()).factorsListCommand(person, o));
  f.command("reset")
    .description("remove every factor of a person (a lost phone or key): their next sign-in enrols again")
    .argument("<person>", "a configured user's name")
    .option("--by <operator>", "who resets (default: the login name)")
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (person: string, o) => (await load.factors()).factorsResetCommand(person, o));
}
