// Where a test run keeps a copy of every log line and of every notification mail (checked for
// secrets by scripts/check-log-secrets.mjs). The main suite and the fault suite keep their own.
import path from "node:path";
import { fileURLToPath } from "node:url";

const tmp = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../.vitest-tmp");

export const LOG_COPY = path.join(tmp, "test-logs.jsonl");
export const MAIL_COPY = path.join(tmp, "test-mails.jsonl");
export const FAULTS_LOG_COPY = path.join(tmp, "faults-logs.jsonl");
export const FAULTS_MAIL_COPY = path.join(tmp, "faults-mails.jsonl");
