// Where the test run keeps a copy of every log line (checked for secrets by scripts/check-log-secrets.mjs).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const LOG_COPY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../.vitest-tmp/test-logs.jsonl');
