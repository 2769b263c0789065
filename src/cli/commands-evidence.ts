// The evidence commands: a signed bundle of a sent fax, its offline check, and the signing key.
import type { Command } from "commander";
import { Option } from "commander";
import { configOption, jsonOption, load, wholeNumber } from "./options.js";

/** evidence <job>, evidence verify, evidence key */
export function evidenceCommands(program: Command): void {
  const evidence = program
    .command("evidence")
    .description(
      "a signed evidence bundle (zip) of a sent fax: the documents, the fax as the service rendered it, " +
        "the service's record, the transmission report and the ledger's rows, with SHA-256 of each in a " +
        "manifest signed by the gateway's Ed25519 key (and an RFC 3161 time-stamp when evidence.tsa is set).\n" +
        "A job with several recipients: one bundle holds every recipient the service took, each in " +
        "recipients/<n>/; --recipient N makes one of recipient N alone (numbered as `faxgate job` lists them).",
    )
    .argument("<job>", "job id")
    // not a requiredOption: commander would ask it of `evidence verify` and `evidence key` too
    .option("-o, --out <file>", "where to write the bundle (FILE.zip; required)")
    .addOption(
      new Option("--recipient <n>", "only this recipient (1 = the first, as `faxgate job` lists them)").argParser(
        wholeNumber(1, 10_000),
      ),
    )
    .option(
      "--without-timestamp",
      "when the time-stamp authority (evidence.tsa) gives no token, make the bundle without one instead of failing",
    )
    .addOption(configOption())
    .action(async (job: string, o) => (await load.evidence()).makeCommand(job, o));

  evidence
    .command("verify")
    .description(
      "check a bundle offline: the manifest's signature, every member's SHA-256, nothing missing or added, " +
        "and the time-stamp token when there is one (exit 0 when all hold, 1 naming what fails)",
    )
    .argument("<file>", "the bundle (FILE.zip)")
    .option(
      "--key <pem-file-or-fingerprint>",
      "the gateway's public key (a PEM file from `faxgate evidence key`) or its fingerprint: the signer must be it",
    )
    .option("--tsa-ca <file>", "CA certificate(s) (PEM) the time-stamp authority's certificate must chain to")
    .addOption(jsonOption())
    .action(async (file: string, o) => {
      process.exitCode = await (await load.evidence()).verifyCommand(file, o);
    });

  evidence
    .command("key")
    .description(
      "print the gateway's public signing key (PEM) and its fingerprint; the key is made in the data " +
        "folder on first use unless evidence.signingKey is set",
    )
    .option(
      "--new",
      "print a new private key as one base64 line for evidence.signingKey (a fleet's secrets file); nothing is stored",
    )
    .addOption(configOption())
    .addOption(jsonOption())
    // `evidence` itself takes --config, and commander gives it to the parent wherever it stands
    .action(async (_o, cmd: Command) => (await load.evidence()).keyCommand(cmd.optsWithGlobals()));
}
