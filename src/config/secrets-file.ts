// The secrets file (`secretsFile:` in the config): NAME=VALUE lines, the format of systemd's
// EnvironmentFile, so the daemon under systemd, the daemon under anything else and the CLI run by
// an admin (`sudo -u faxgate faxgate doctor`) all read the same secrets from the same place.
// Its values win over the process environment: after an edit and a SIGHUP the new value counts,
// although the process still carries the old one that systemd gave it at start.
import { readFileSync } from "node:fs";
import { FaxgateError } from "../errors.js";

const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/;

/** Parses NAME=VALUE lines: `#` comments, blank lines, optional `export `, "double" or 'single' quotes. */
export function parseSecretsText(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    if (/^\s*(#|;|$)/.test(raw)) continue;
    const m = LINE.exec(raw);
    if (!m) continue;
    let value = m[2]!;
    if (
      value.length >= 2 &&
      ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))
    ) {
      const quote = value[0];
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\(["\\$`])/g, "$1").replace(/\\n/g, "\n");
    }
    out[m[1]!] = value;
  }
  return out;
}

export function readSecretsFile(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    const hint = code === "EACCES" ? " (make it readable by the user running faxgate: chgrp faxgate, chmod 0640)" : "";
    throw new FaxgateError("CONFIG_INVALID", `secretsFile: cannot read ${file}: ${code}${hint}`, {
      field: "secretsFile",
      cause: err,
    });
  }
  return parseSecretsText(text);
}

/**
 * The text of a secrets file with NAME set to VALUE (the line replaced in place, comments and
 * other lines kept), or null when the file has no line for NAME.
 */
export function replaceSecret(text: string, name: string, value: string): string | null {
  let found = false;
  const lines = text.split("\n").map((raw) => {
    const m = LINE.exec(raw.replace(/\r$/, ""));
    if (!m || m[1] !== name || /^\s*#/.test(raw)) return raw;
    found = true;
    const prefix = /^\s*export\s+/.test(raw) ? "export " : "";
    return `${prefix}${name}=${value}${raw.endsWith("\r") ? "\r" : ""}`;
  });
  return found ? lines.join("\n") : null;
}
