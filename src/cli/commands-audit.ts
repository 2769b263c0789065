// The compliance ledger's commands (docs/compliance.md): verify the chain, export rows, anchor
// the head somewhere else.
import { type Command, InvalidArgumentError, Option } from "commander";
import { LEDGER_ACTIONS } from "../ledger/events.js";
import { LEDGER_OBJECT_KINDS, parseObjectRef } from "../ledger/filter.js";
import { configOption, isoDate, jsonOption, load } from "./options.js";

/** KIND:ID, e.g. job:J123 or received:R9; anything else is a usage error. */
function objectRef(v: string): { kind: string; id: string } {
  const ref = parseObjectRef(v);
  if (!ref)
    throw new InvalidArgumentError(`expected KIND:ID with KIND one of ${LEDGER_OBJECT_KINDS.join(", ")}, got "${v}"`);
  return ref;
}

/** audit verify, audit export, audit anchor */
export function auditCommands(program: Command): void {
  const audit = program
    .command("audit")
    .description("the compliance ledger: who sent, saw and changed what (docs/compliance.md)");
  audit
    .command("verify")
    .description(
      "walk the ledger's hash chain: exit 0 when it is whole, exit 1 naming the first edited, deleted, inserted or reordered row; rows waiting over a minute to be sealed into it (PostgreSQL: no gateway seals) are named on stderr and in --json (stalePending)",
    )
    .option(
      "--anchor <file>",
      "also hold the chain to every head kept in this file by `audit anchor` (finds a rewrite of the whole table)",
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o) => {
      process.exitCode = await (await load.audit()).auditVerifyCommand(o);
    });
  audit
    .command("export")
    .description("the ledger's rows, oldest first, to stdout (numbers appear only as their keyed hash)")
    .addOption(new Option("--since <time>", "rows at or after this time (ISO 8601)").argParser(isoDate))
    .addOption(new Option("--until <time>", "rows before this time (ISO 8601)").argParser(isoDate))
    .option("--user <name>", "rows where this person acted or was acted on")
    .addOption(
      new Option(
        "--object <kind:id>",
        "rows about one object, e.g. job:J123 (with its recipients), received:R9",
      ).argParser(objectRef),
    )
    .option("--number <e164>", "rows about this fax number (matched by its keyed hash)")
    .addOption(
      new Option("--action <action>", "rows of this action only, e.g. downloaded").choices([...LEDGER_ACTIONS]),
    )
    .addOption(new Option("--format <format>", "jsonl or csv").choices(["jsonl", "csv"]).default("jsonl"))
    .addOption(configOption())
    .action(async (o) => (await load.audit()).auditExportCommand(o));
  audit
    .command("anchor")
    .description(
      "print the ledger's head (seq, hash, time) as one line to keep elsewhere; `audit verify --anchor` then proves the table was not rewritten up to it",
    )
    .option("--out <file>", "also append the line to this file")
    .addOption(configOption())
    .action(async (o) => {
      process.exitCode = await (await load.audit()).auditAnchorCommand(o);
    });
}
