// Toll fraud against a real daemon: a table of premium-rate, emergency, special-service and
// operator-ruled numbers, each tried by mail (RCPT) and by a file dropped in a spool folder. A
// refused number gets 553 5.1.3 naming its rule and a file in failed/ with the reason; nothing
// refused reaches the service; an allowed number is faxed. A SIGHUP brings a new deny rule.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../helpers/wait.js";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { TEST_PDF } from "../helpers/store.js";
import { disposeRig, emulatorFaxes, makeRig, startDaemon, type Daemon, type Rig } from "./harness.js";

// [as written, rule the refusal names (or null: allowed)]
const CASES: Array<[string, string | null]> = [
  ["1-900-555-0199", "premium-rate"],
  ["+1 (976) 555-0199", "premium-rate"],
  ["+44 909 000 0000", "premium-rate"],
  ["0044 909 000 0000", "premium-rate"],
  ["+33 899 123 456", "premium-rate"],
  ["+49 137 5555555", "shared-cost"],
  ["+44 70 1234 5678", "personal-number"],
  ["+882 3123456789", "international-network"],
  ["+881 612345678", "international-network"],
  ["+870 773111111", "international-network"],
  ["+1 911 555 0100", "emergency"],
  ["1 212 911 1234", "emergency"],
  ["911", "Bad fax number"],
  ["112", "Bad fax number"],
  ["+1 900 555 0142", null], // allowed by the gateway's pattern rule
  ["+1 555 999 0001", "destinations.rules[1]"], // denied by the gateway's prefix rule
  ["+850 2 381 2345", "destinations.rules[2]"], // denied by country
  ["+1 555 123 4567", null],
  ["+44 20 7946 0000", null],
];

const RULES = [
  { action: "allow", pattern: "+1 900 555 014#" },
  { action: "deny", prefix: "+1 555 999" },
  { action: "deny", country: "KP" },
];

let rig: Rig;
let daemon: Daemon;
const figures: string[] = [];

beforeAll(async () => {
  rig = await makeRig({ config: { destinations: { rules: RULES } } });
  daemon = await startDaemon(rig);
});
afterAll(async () => {
  await disposeRig(rig, daemon);
  if (figures.length) process.stdout.write(`\ndestination policy figures:\n  ${figures.join("\n  ")}\n`);
});

async function rcptReplies(numbers: string[]): Promise<string[]> {
  const { client } = await RawSmtp.connect(rig.smtpPort);
  try {
    await client.cmd("EHLO policy.test");
    expect(await client.cmd("MAIL FROM:<alice@example.com>")).toMatch(/^250/);
    const out: string[] = [];
    for (const n of numbers) out.push(await client.cmd(`RCPT TO:<${n.replace(/ /g, "")}@fax.example.com>`));
    await client.cmd("QUIT");
    return out;
  } finally {
    client.close();
  }
}

const digits = (s: string) => s.replace(/\D/g, "").replace(/^00/, "");

describe("destination policy, table-driven, on a running daemon", () => {
  it("by mail: 553 5.1.3 naming the rule for each refused number, 250 for each allowed one", async () => {
    const replies = await rcptReplies(CASES.map(([n]) => n));
    CASES.forEach(([n, rule], i) => {
      const reply = replies[i]!;
      if (rule === null) expect(reply, n).toMatch(/^250 /);
      else {
        expect(reply, n).toMatch(/^553 5\.1\.3 /);
        expect(reply, n).toContain(rule);
      }
    });
    figures.push(
      `mail: ${replies.filter((r) => r.startsWith("553")).length} of ${CASES.length} RCPTs refused with 553 5.1.3, ${replies.filter((r) => r.startsWith("250")).length} accepted`,
    );
  });

  it("by print: each refused file in failed/ with its rule in the reason, each allowed one faxed, nothing refused at the service", async () => {
    const folder = path.join(rig.spoolRoot, "alice");
    await waitUntil(() => existsSync(folder), "alice's spool folder");
    // a name is "<number> - <subject>.pdf"; the number as written (spaces and brackets allowed)
    const named = CASES.filter(([n]) => !/[()]/.test(n)).map(([n, rule], i) => ({
      n,
      rule,
      file: `${n} - case ${i}.pdf`,
    }));
    // distinct bytes per file, so the spool's dedupe window cannot take one for a repeat of another
    for (const c of named)
      writeFileSync(path.join(folder, c.file), Buffer.concat([TEST_PDF, Buffer.from(`\n% ${c.file}\n`)]));
    const failed = path.join(folder, "failed");
    const done = path.join(folder, "done");
    const missing = () =>
      named.filter((c) => !existsSync(path.join(c.rule === null ? done : failed, c.file))).map((c) => c.file);
    try {
      await waitUntil(() => missing().length === 0, "every file in done/ or failed/", 120_000, 200);
    } catch (err) {
      throw new Error(
        `${(err as Error).message}: ${JSON.stringify(missing())}; failed/ has ${JSON.stringify(readdirSync(failed))}, done/ ${JSON.stringify(readdirSync(done))}, folder ${JSON.stringify(readdirSync(folder))}`,
      );
    }
    for (const c of named.filter((x) => x.rule !== null)) {
      const reason = readFileSync(path.join(failed, `${c.file}.reason.txt`), "utf8");
      // a three-digit "number" is not even taken for one from a file name
      if (c.rule === "Bad fax number") expect(reason, c.n).toMatch(/must have 4 to 15 digits|no fax number was found/);
      else expect(reason, c.n).toContain(c.rule!);
    }
    const allowed = new Set(CASES.filter(([, r]) => r === null).map(([n]) => digits(n)));
    const faxes = await waitUntil(
      async () => {
        const f = await emulatorFaxes(rig);
        return f.length >= allowed.size ? f : null;
      },
      "the allowed numbers faxed",
      60_000,
      300,
    );
    expect(new Set(faxes.map((f) => digits(f.faxNumber)))).toEqual(allowed);
    figures.push(
      `print: ${named.filter((c) => c.rule !== null).length} files refused into failed/ with the rule, ${named.filter((c) => c.rule === null).length} faxed; the service saw ${faxes.length} faxes, none to a refused number`,
    );
  });

  it("a deny rule added with SIGHUP applies to the next RCPT", async () => {
    expect((await rcptReplies(["+1 555 777 0001"]))[0]).toMatch(/^250 /);
    rig.rewrite((raw) => ({
      ...raw,
      destinations: { rules: [...RULES, { action: "deny", prefix: "+1 555 777" }] },
    }));
    daemon.child.kill("SIGHUP");
    await daemon.out.waitFor(/RELOADED users/, 30_000);
    const [reply] = await rcptReplies(["+1 555 777 0001"]);
    expect(reply).toMatch(/^553 5\.1\.3 .*destinations\.rules\[3\] \(deny prefix \+1 555 777\)/);
  });
});
