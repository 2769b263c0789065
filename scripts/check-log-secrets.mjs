#!/usr/bin/env node
// After the test suite: every log line any test or daemon wrote (FAXGATE_LOG_COPY) must be free of
// the secrets the tests use. Fails when one appears, and when the copy is suspiciously empty (a
// check that read nothing would prove nothing).
import { existsSync, readFileSync } from 'node:fs';

const file = process.argv[2];
const SECRETS = [
  'test-admin-key', 'alice-print-key', 'alice-base-key', 'bob-print-key', // test/helpers/emulator.ts
  'sandbox-demo-key', // src/sandbox.ts
  'correct horse battery', // test/daemon/cli.test.ts (passwd)
];
const PATTERNS = [
  [/sandbox-admin-[0-9a-f]{24}/, 'a sandbox admin key'],
  [/"authorization":"Basic (?!\[redacted\])/i, 'an Authorization header'],
];

if (!file || !existsSync(file)) {
  console.error(`check-log-secrets: no log copy at ${file} (was FAXGATE_LOG_COPY set for the tests?)`);
  process.exit(1);
}
const text = readFileSync(file, 'utf8');
const lines = text.split('\n').filter(Boolean);
const found = [];
for (const s of SECRETS) {
  const n = lines.filter((l) => l.includes(s)).length;
  if (n) found.push(`${n} line(s) contain the test secret "${s}"`);
}
for (const [re, what] of PATTERNS) {
  const n = lines.filter((l) => re.test(l)).length;
  if (n) found.push(`${n} line(s) contain ${what}`);
}
if (lines.length < 1000) found.push(`only ${lines.length} log lines were captured: the copy is not working`);
if (found.length) {
  console.error(`check-log-secrets: FAILED\n  ${found.join('\n  ')}`);
  process.exit(1);
}
console.log(`check-log-secrets: ${lines.length} log lines from the whole test run, no API key, password or Authorization header in any`);
