// `faxgate audit verify|export|anchor`, the real CLI against a real ledger on each store: a row
// edited or deleted is named by verify (exit 1), an export filters as asked, and an anchor finds a
// rewrite of the whole table that the chain alone cannot.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealRow } from "../../src/ledger/chain.js";
import { SqlLedger } from "../../src/ledger/ledger.js";
import { appendLedger, type LedgerRecord } from "../../src/store/sql/ledger.js";
import { PgStore } from "../../src/store/postgres/pg-store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { runCli } from "../helpers/cli.js";
import { newJob } from "../helpers/store.js";
import { usePgCluster } from "../helpers/store-backends.js";

const KEY = process.env.FAXGATE_LEDGER_KEY!;
const NUMBER = "+15550107788";
const postgres = usePgCluster("faxgate audit on PostgreSQL");

describe.each(postgres.missing === null ? ["sqlite", "postgres"] : ["sqlite"])("faxgate audit on %s", (backend) => {
  let dir: string;
  let config: string;
  let store: QueueStore;
  let ledger: SqlLedger;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-audit-"));
    const data = path.join(dir, "data");
    mkdirSync(data);
    let database = "";
    if (backend === "postgres") database = await postgres.database();
    config = path.join(dir, "faxgate.yaml");
    writeFileSync(
      config,
      [
        "api:",
        "  baseUrl: https://fax.example.invalid",
        `data: ${data}`,
        database ? `database: ${database}` : "",
        "users:",
        "  - name: alice",
        "    email: alice@example.com",
        "    apiKey: not-used-here",
        "",
      ].join("\n"),
    );
    store = database
      ? await PgStore.open({ url: database, dataDir: path.join(dir, "pgdata") })
      : SqliteStore.open({ dataDir: data });
    ledger = new SqlLedger(store.sql, Buffer.from(KEY));
    await ledger.record({
      action: "sent",
      actor: { kind: "person", id: "alice" },
      object: { kind: "job", id: "J1" },
      door: "smtp",
      number: NUMBER,
    });
    await ledger.record({
      action: "viewed",
      actor: { kind: "operator", id: "olga" },
      object: { kind: "job", id: "J1" },
      door: "console",
      client: "10.0.0.9",
    });
    await ledger.record({
      action: "downloaded",
      actor: { kind: "person", id: "bob" },
      object: { kind: "received", id: "R7" },
      door: "console",
      detail: { note: 'a "quoted", comma' },
    });
    await ledger.record({
      action: "config-reloaded",
      actor: { kind: "gateway" },
      object: { kind: "config", id: "faxgate.yaml" },
      door: "gateway",
    });
    // PostgreSQL commits rows unsealed; the CLI's verify only reads, so they are sealed first here
    await ledger.sealer.sealNow();
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const audit = (...args: string[]) => runCli(["audit", ...args, "--config", config], { timeoutMs: 60_000 });

  it("verify passes a whole chain and names an edited, then a deleted row (exit 1)", async () => {
    const whole = await audit("verify");
    expect(whole.stdout).toMatch(/the ledger is whole: 4 rows, head seq=4/);
    expect(whole.code).toBe(0);

    await store.sql.run("UPDATE ledger SET actor_id = 'mallory' WHERE seq = 2");
    const edited = await audit("verify");
    expect(edited.stderr).toMatch(/broken at row 2: row 2 was changed after it was written/);
    expect(edited.code).toBe(1);
    await store.sql.run("UPDATE ledger SET actor_id = 'olga' WHERE seq = 2");

    const kept = await store.sql.get<LedgerRecord>("SELECT * FROM ledger WHERE seq = 3");
    await store.sql.run("DELETE FROM ledger WHERE seq = 3");
    const deleted = await audit("verify", "--json");
    expect(JSON.parse(deleted.stdout)).toMatchObject({ whole: false, brokenAt: 3 });
    expect(deleted.code).toBe(1);
    await insert(kept!);
    expect((await audit("verify")).code).toBe(0);
  }, 120_000);

  async function insert(r: LedgerRecord): Promise<void> {
    const cols = Object.keys(r) as Array<keyof LedgerRecord>;
    await store.sql.run(
      `INSERT INTO ledger (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
      cols.map((c) => r[c]),
    );
  }

  it("export filters by user, object and number; csv quotes what must be quoted", async () => {
    const all = (await audit("export")).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(all.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    const byNumber = await audit("export", "--number", "+1 555 010 7788");
    expect(
      byNumber.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).seq),
    ).toEqual([1]);
    expect(byNumber.stdout).not.toContain("5550107788");
    const byObject = await audit("export", "--object", "job:J1", "--user", "olga");
    expect(
      byObject.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).seq),
    ).toEqual([2]);
    const csv = await audit("export", "--format", "csv", "--object", "received:R7");
    const lines = csv.stdout.trim().split("\r\n");
    expect(lines[0]).toBe(
      "seq,at,action,actor_kind,actor_id,object_kind,object_id,door,client,number_hash,detail,prev_hash,hash",
    );
    expect(lines[1]).toContain(`"{""note"":""a \\""quoted\\"", comma""}"`);
    const bad = await audit("export", "--object", "nothing");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/expected KIND:ID/);
  }, 120_000);

  it("an operator's hold from the CLI is a row by that account through the cli door", async () => {
    const { job } = await store.enqueue(newJob(dir));
    const held = await runCli(["hold", job.id, "--config", config], { timeoutMs: 60_000 });
    expect(held.code, held.stderr).toBe(0);
    const rows = (await audit("export", "--object", `job:${job.id}`)).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => [r.action, r.actor, r.door])).toEqual([
      ["held", { kind: "operator", id: os.userInfo().username }, "cli"],
    ]);
    // the chain is left whole for the anchor test below
    await store.sql.run("DELETE FROM ledger WHERE object_id = ?", [job.id]);
  }, 120_000);

  it("an anchor kept elsewhere finds a rewrite of the whole table", async () => {
    const anchors = path.join(dir, "anchors.txt");
    const a = await audit("anchor", "--out", anchors);
    expect(a.code).toBe(0);
    expect(readFileSync(anchors, "utf8")).toMatch(/^faxgate-ledger-anchor seq=4 hash=[0-9a-f]{64} at=\S+ taken=\S+\n$/);
    expect((await audit("verify", "--anchor", anchors)).code).toBe(0);

    // row 2 edited and every row from it resealed: the chain alone holds, the anchor does not
    const rows = await store.sql.all<LedgerRecord>("SELECT * FROM ledger ORDER BY seq");
    await store.sql.run("DELETE FROM ledger WHERE seq >= 2");
    let prev = rows[0]!.hash;
    for (const r of rows.slice(1)) {
      const changed = { ...r, seq: Number(r.seq), prev_hash: prev, actor_id: r.seq === 2 ? "nobody" : r.actor_id };
      const row = { ...changed, hash: sealRow(changed) };
      await insert(row);
      prev = row.hash;
    }
    expect((await audit("verify")).code).toBe(0);
    const anchored = await audit("verify", "--anchor", anchors);
    expect(anchored.stderr).toMatch(/row 4 is not the row the anchor taken \S+ kept .*rewritten/);
    expect(anchored.code).toBe(1);
  }, 120_000);

  it.runIf(backend === "postgres")(
    "verify names a row left unsealed for long, not as a break (exit 0); a seal clears it",
    async () => {
      // what a fleet with no sealer running leaves: a row committed two minutes ago, still pending
      const twoMinutesAgo = new Date(Date.now() - 120_000).toISOString();
      const [fields] = ledger.rowsFor([
        { action: "viewed", actor: { kind: "operator", id: "olga" }, object: { kind: "job", id: "J9" }, door: "cli" },
      ]);
      await store.sql.tx("a commit never sealed", (t) => appendLedger(t, { ...fields!, at: twoMinutesAgo }));
      const stale = await audit("verify");
      expect(stale.stdout).toMatch(/the ledger is whole: 4 rows/);
      expect(stale.stderr).toMatch(
        new RegExp(
          `1 rows wait to be sealed into the chain, the oldest since ${twoMinutesAgo}.*is any gateway running`,
        ),
      );
      expect(stale.code).toBe(0);
      const json = JSON.parse((await audit("verify", "--json")).stdout);
      expect(json).toMatchObject({ whole: true, pending: 1, stalePending: true });
      // any process may seal: an export seals what is pending before it reads
      const exported = (await audit("export")).stdout.trim().split("\n");
      expect(JSON.parse(exported.at(-1)!)).toMatchObject({ seq: 5, object: { kind: "job", id: "J9" } });
      const after = await audit("verify");
      expect(after.stdout).toMatch(/the ledger is whole: 5 rows/);
      expect(after.code).toBe(0);
    },
    120_000,
  );
});
