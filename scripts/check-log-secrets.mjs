#!/usr/bin/env node
// After a test suite: every log line any test or daemon wrote (FAXGATE_LOG_COPY) and every
// notification mail they handed over (FAXGATE_MAIL_COPY) must be free of the secrets the tests
// use. Fails when one appears, and when a copy is suspiciously small (a check that read nothing
// would prove nothing).
//   node scripts/check-log-secrets.mjs LOGS.jsonl MIN_LINES [MAILS.jsonl MIN_MAILS]
import { existsSync, readFileSync } from "node:fs";

const SECRETS = [
  "test-admin-key",
  "alice-print-key",
  "alice-base-key",
  "bob-print-key", // test/helpers/emulator.ts
  "sandbox-demo-key", // src/sandbox.ts
  "correct horse battery", // test/daemon/cli.test.ts (passwd)
  "correct-horse-battery-staple", // test/webhooks/gateway-webhooks.test.ts (webhook password)
  "alice-web-secret-1",
  "bob-web-secret-2",
  "ops-web-secret-3", // test/web/rig.ts (console sign-in passwords)
];
const PATTERNS = [
  [/sandbox-admin-[0-9a-f]{24}/, "a sandbox admin key"],
  [/"authorization":"Basic (?!\[redacted\])/i, "an Authorization header"],
];

const [logFile, minLogs = "1000", mailFile, minMails = "1"] = process.argv.slice(2);

function check(file, min, what) {
  if (!file || !existsSync(file))
    return [`no ${what} copy at ${file} (was the FAXGATE_*_COPY variable set for the tests?)`];
  const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
  const found = [];
  for (const s of SECRETS) {
    const n = lines.filter((l) => l.includes(s)).length;
    if (n) found.push(`${n} ${what}(s) contain the test secret "${s}"`);
  }
  for (const [re, desc] of PATTERNS) {
    const n = lines.filter((l) => re.test(l)).length;
    if (n) found.push(`${n} ${what}(s) contain ${desc}`);
  }
  if (lines.length < Number(min))
    found.push(`only ${lines.length} ${what}(s) were captured (expected at least ${min}): the copy is not working`);
  counts.push(`${lines.length} ${what}s`);
  return found;
}

const counts = [];
const found = [
  ...check(logFile, minLogs, "log line"),
  ...(mailFile ? check(mailFile, minMails, "notification mail") : []),
];
if (found.length) {
  console.error(`check-log-secrets: FAILED\n  ${found.join("\n  ")}`);
  process.exit(1);
}
console.log(
  `check-log-secrets: ${counts.join(" and ")} from the whole run; no API key, password or Authorization header in any`,
);
