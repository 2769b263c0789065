// A rolling upgrade on one PostgreSQL (issue 55, docs/ha.md "Rolling upgrades"). Version N is the
// code just before the newest schema step (the first parent of main's last commit that changed
// src/store/postgres/schema.ts, taken from git into a temp folder and run from its sources);
// N+1 is this tree. Gateway A runs N and makes the schema; B starts on N+1 and adds the newest
// step while A serves; both take and send mail; B stops and A alone serves on the newer schema
// (older code keeps working on it: the rule the steps follow); then A is upgraded to N+1. Every
// mail accepted is delivered exactly once. Skips without PostgreSQL or without git history.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import nodemailer from "nodemailer";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PG_MIGRATIONS } from "../../src/store/postgres/schema.js";
import { childEnv } from "../helpers/cli.js";
import { endChild, prepareDaemon, startGateway, type TestDaemon, type TestGateway } from "../helpers/gateway.js";
import { TEST_PDF } from "../helpers/store.js";
import { OutputWatch } from "../helpers/wait.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";
import { usePgCluster } from "../helpers/store-backends.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The commit before the newest schema step, or why there is none to run. Along main's own line
 * (first parents): a branch may shape its step over several commits before it is merged, and
 * only main's states are versions someone ran (a branch's half-made step, taken as N, made its
 * step 16 without the table N+1's step 16 has).
 */
function previousVersion(): { commit: string } | { why: string } {
  const git = (args: string[]) => spawnSync("git", args, { cwd: repo, encoding: "utf8" });
  // the step list as written at `rev` (steps are only appended, never edited: a hash test)
  const steps = (rev: string): string | null => {
    const r = git(["show", `${rev}:src/store/postgres/schema.ts`]);
    const start = r.status === 0 ? r.stdout.indexOf("export const PG_MIGRATIONS") : -1;
    const end = start < 0 ? -1 : r.stdout.indexOf("\n];", start);
    return end < 0 ? null : r.stdout.slice(start, end);
  };
  const now = steps("HEAD");
  const log = git(["log", "--first-parent", "--format=%H", "--", "src/store/postgres/schema.ts"]);
  if (log.status !== 0 || !now || !log.stdout.trim()) return { why: "no git history of src/store/postgres/schema.ts" };
  // the newest change that added steps still there: a step merged and reverted before it shipped
  // leaves a parent with more steps than now, and a change that added none leaves the same list
  for (const commit of log.stdout.trim().split("\n")) {
    const parent = git(["rev-parse", `${commit}^1`]);
    if (parent.status !== 0) break;
    const then = steps(parent.stdout.trim());
    if (then && then.length < now.length && now.startsWith(then)) return { commit: parent.stdout.trim() };
  }
  return { why: "no earlier version of the schema steps in the git history" };
}

const version = previousVersion();
const postgres = usePgCluster("rolling upgrade test");
const skip = postgres.missing ?? ("why" in version ? version.why : null);
if ("why" in version) console.warn(`rolling upgrade test skipped: ${version.why}`);

const SMTP = { listen: ["127.0.0.1:0"], domains: ["fax.example.com"] };
let url = "";
let oldTree = "";
let a: TestDaemon | undefined;
let aNew: TestGateway | undefined;
let b: TestGateway | undefined;
beforeAll(async () => {
  if (skip || "why" in version) return;
  oldTree = tempFolder("version-n");
  execFileSync("sh", ["-c", `git archive ${version.commit} | tar -x -C "${oldTree}"`], { cwd: repo });
  symlinkSync(path.join(repo, "node_modules"), path.join(oldTree, "node_modules"));
  url = await postgres.database();
}, 120_000);
afterAll(async () => {
  await a?.stop();
  await aNew?.stop();
  await b?.stop();
  if (oldTree) removeFolder(oldTree);
});

/** Starts version N's daemon on `d`'s folder and config, from the old tree's sources. */
async function startOld(d: TestDaemon): Promise<void> {
  mkdirSync(d.dir, { recursive: true });
  const loader = path.join(oldTree, "node_modules/tsx/dist/loader.mjs");
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", `file://${loader}`, path.join(oldTree, "src/cli/entry.ts"), "start", "--config", d.configFile],
    { cwd: d.dir, env: childEnv(), stdio: ["pipe", "pipe", "pipe"] },
  );
  const out = new OutputWatch(child.stdout!);
  const err = new OutputWatch(child.stderr!);
  const started = await Promise.race([
    out.waitFor(/^.*"msg":"STARTED".*$/m, 90_000),
    new Promise<never>((_, reject) =>
      child.once("exit", (code) => reject(new Error(`version N exited with ${code}: ${err.text.slice(-2000)}`))),
    ),
  ]);
  Object.assign(d, { child, out, err, addresses: JSON.parse(started[0]) });
}

let mailNo = 0;
/** One mail with a PDF to a number of its own; answers the number once the gateway said 250. */
async function mail(port: number): Promise<string> {
  // last four digits from 1101 up: the emulator fails 0000-0003 on purpose
  const number = `+1555${String(4_201_100 + ++mailNo).padStart(7, "0")}`;
  const t = nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true });
  try {
    await t.sendMail({
      from: "alice@example.com",
      to: `${number}@fax.example.com`,
      subject: `upgrade ${mailNo}`,
      text: "see attached",
      attachments: [{ filename: "page.pdf", content: TEST_PDF }],
    });
  } finally {
    t.close();
  }
  return number;
}

/** Waits until each of `numbers` has exactly one delivered recipient in the shared queue. */
async function delivered(numbers: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await expect
      .poll(
        async () => {
          const r = await c.query(
            "SELECT number, COUNT(*)::int AS n, MIN(state) AS state FROM recipients WHERE number = ANY($1) GROUP BY number",
            [numbers],
          );
          return r.rows.filter((x) => x.n === 1 && x.state === "delivered").length;
        },
        { timeout: 60_000, interval: 250 },
      )
      .toBe(numbers.length);
  } finally {
    await c.end();
  }
}

async function schemaVersion(): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query("SELECT version FROM faxgate_schema")).rows[0].version as number;
  } finally {
    await c.end();
  }
}

describe.skipIf(skip)("rolling upgrade: A on version N, B on N+1, then A", () => {
  it("older code keeps serving on the newer schema; every mail delivered once", async () => {
    a = await prepareDaemon({
      name: "upgrade-a",
      config: { database: url, smtp: SMTP, queue: { pollInterval: "200ms" } },
    });
    await startOld(a);
    const n = await schemaVersion();
    expect(n).toBeLessThan(PG_MIGRATIONS.length);
    await delivered([await mail(a.addresses.smtp[0]!.port)]);

    // B upgraded: it adds the newest steps while A runs
    b = await startGateway({ name: "upgrade-b", log: "quiet", config: { database: url, smtp: SMTP } });
    expect(await schemaVersion()).toBe(PG_MIGRATIONS.length);
    const both: string[] = [];
    for (let i = 0; i < 3; i++) both.push(await mail(a.addresses.smtp[0]!.port), await mail(b.smtpPort));
    await delivered(both);

    // A alone, still version N, on the newer schema: it takes mail and sends it
    await b.stop();
    b = undefined;
    const alone = [await mail(a.addresses.smtp[0]!.port), await mail(a.addresses.smtp[0]!.port)];
    await delivered(alone);
    expect(a.child.exitCode).toBeNull();

    // then A upgraded
    await endChild(a.child, "SIGTERM");
    aNew = await startGateway({ name: "upgrade-a2", log: "quiet", config: { database: url, smtp: SMTP } });
    await delivered([await mail(aNew.smtpPort)]);
    expect(await schemaVersion()).toBe(PG_MIGRATIONS.length);
  }, 300_000);
});
