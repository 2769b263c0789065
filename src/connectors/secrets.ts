// A connector's credentials come only from the secrets file (`secretsFile:`), named in the config
// by the line's NAME: read when used, so a credential changed in the file counts from the next try.
import { readFileSync } from "node:fs";
import { readSecretsFile } from "../config/index.js";
import { refused } from "./problem.js";

export type SecretReader = (name: string) => string;

/** Reads NAME from the secrets file; a missing file or line is a problem a person must fix. */
export function secretsFrom(file: () => string | null): SecretReader {
  return (name) => {
    const f = file();
    if (!f) throw refused(`the secret ${name} is needed but no secretsFile is configured`);
    const value = readSecretsFile(f)[name];
    if (value === undefined || value === "") throw refused(`the secret ${name} is not in the secrets file`);
    return value;
  };
}

/** The CA certificates of one connector (PEM), or undefined for the system's. */
export function caOf(caFile: string | undefined): string | undefined {
  if (!caFile) return undefined;
  try {
    return readFileSync(caFile, "utf8");
  } catch (err) {
    throw refused(`the caFile ${caFile} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`, err);
  }
}
