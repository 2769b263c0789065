// Starts each run with empty log and mail copies, so the secret check reads only this run's lines,
// and compiles the sources once for the CLI and daemon processes the tests start.
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { buildSources } from "./helpers/built-sources.js";

export default async function setup(project: TestProject): Promise<void> {
  await buildSources();
  const env = project.config.env ?? {};
  for (const key of ["FAXGATE_LOG_COPY", "FAXGATE_MAIL_COPY"]) {
    const file = env[key];
    if (typeof file !== "string") continue;
    mkdirSync(path.dirname(file), { recursive: true });
    rmSync(file, { force: true });
  }
}
