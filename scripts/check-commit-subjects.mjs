#!/usr/bin/env node
// Commit subjects stay at most 72 characters, so `git log --oneline` and mail-style tools read
// them whole. Checks every commit since BASE (older history keeps its long subjects: it cannot be
// rewritten), or with --message-file one new message (the commit-msg hook). Outside a git
// checkout, or when BASE is not in a shallow clone, it says so and passes.
//   node scripts/check-commit-subjects.mjs [BASE]          (default: the first checked commit)
//   node scripts/check-commit-subjects.mjs --message-file .git/COMMIT_EDITMSG
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

export const MAX_SUBJECT = 72;
// main's tip when the rule came in; every commit after it is checked
const FIRST_CHECKED_BASE = "68e062c7cf2a62ea53ffc6f9c631749afb1d00bd";

function git(...args) {
  const r = spawnSync("git", args, { encoding: "utf8" });
  return r.status === 0 ? r.stdout : null;
}

/** The subject of a commit message as git keeps it: the first line that is not a comment. */
function subjectOf(message) {
  return message.split("\n").find((l) => !l.startsWith("#") && l.trim() !== "") ?? "";
}

function tooLong(subject) {
  return [...subject].length > MAX_SUBJECT;
}

const args = process.argv.slice(2);
if (args[0] === "--message-file") {
  const subject = subjectOf(readFileSync(args[1], "utf8"));
  if (tooLong(subject)) {
    console.error(`commit subject is ${[...subject].length} characters, at most ${MAX_SUBJECT}:\n  ${subject}`);
    process.exit(1);
  }
  process.exit(0);
}

const base = args[0] ?? FIRST_CHECKED_BASE;
if (git("rev-parse", "--git-dir") === null) {
  console.log("commit subjects: not a git checkout, nothing to check");
  process.exit(0);
}
if (git("cat-file", "-e", `${base}^{commit}`) === null) {
  console.log(`commit subjects: ${base.slice(0, 12)} is not in this clone (shallow?), nothing to check`);
  process.exit(0);
}
const log = git("log", "--format=%h %s", `${base}..HEAD`);
if (log === null) {
  console.error("commit subjects: git log failed");
  process.exit(1);
}
const lines = log.split("\n").filter(Boolean);
const bad = lines.filter((l) => tooLong(l.slice(l.indexOf(" ") + 1)));
if (bad.length > 0) {
  console.error(`commit subjects over ${MAX_SUBJECT} characters (since ${base.slice(0, 12)}):`);
  for (const l of bad) console.error(`  ${l}`);
  process.exit(1);
}
console.log(`commit subjects: ${lines.length} since ${base.slice(0, 12)}, all at most ${MAX_SUBJECT} characters`);
