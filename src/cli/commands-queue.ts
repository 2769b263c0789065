// The commands on the queue: fax something, see and act on jobs, their reports and the counts.
import { type Command, Option } from "commander";
import {
  collect,
  configOption,
  jsonOption,
  LISTABLE_STATES,
  load,
  timeZoneName,
  userOption,
  wholeNumber,
} from "./options.js";

/** send, jobs, job, address, report, retry/cancel/hold/release, status */
export function queueCommands(program: Command): void {
  faxCommands(program);
  jobCommands(program);
}

/** send, jobs, job, address: a fax in, and what became of it */
function faxCommands(program: Command): void {
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
}

/** report, retry/cancel/hold/release, status */
function jobCommands(program: Command): void {
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
}
