// The ledger's chain on both stores: rows 1, 2, 3... each sealed over the one before, appended
// inside a caller's transaction when given one (and gone with it when it rolls back), numbers kept
// only as their keyed hash; and on one PostgreSQL two gateways appending at once keep one chain.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { appendLedger, ledgerRows } from "../../src/store/sql/ledger.js";
import { SqlLedger } from "../../src/ledger/ledger.js";
import type { LedgerEvent } from "../../src/ledger/events.js";
import { type BackendName, type BackendStore, openBackend, usePgCluster } from "../helpers/store-backends.js";

const KEY = Buffer.from("k".repeat(40));
const NUMBER = "+15550104477";

const viewed = (job: string, over: Partial<LedgerEvent> = {}): LedgerEvent => ({
  action: "viewed",
  actor: { kind: "person", id: "alice" },
  object: { kind: "job", id: job },
  door: "console",
  client: "127.0.0.1",
  ...over,
});

const postgres = usePgCluster("the ledger's chain on PostgreSQL");
const backends: BackendName[] = postgres.missing === null ? ["sqlite", "postgres"] : ["sqlite"];

describe.each(backends)("the ledger's chain on %s", (backend) => {
  let b: BackendStore;
  let ledger: SqlLedger;
  beforeAll(async () => {
    b = await openBackend(backend, postgres.cluster);
    ledger = new SqlLedger(b.store.sql, KEY);
  }, 120_000);
  afterAll(async () => {
    await b?.cleanup();
  });

  it("appends rows 1, 2, 3 chained by hash, with the number only as its keyed hash", async () => {
    await ledger.record(viewed("J1"));
    await ledger.record(viewed("J1", { action: "sent", number: NUMBER, detail: { pages: 2, route: "x" } }));
    await ledger.record(viewed("J2", { actor: { kind: "gateway" }, door: "gateway", client: undefined }));
    const rows = await ledger.rows();
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(rows[0]!.prevHash).toBe("0".repeat(64));
    expect(rows[1]!.prevHash).toBe(rows[0]!.hash);
    expect(rows[2]!.prevHash).toBe(rows[1]!.hash);
    expect(rows[1]!.detail).toEqual({ pages: 2, route: "x" });
    expect(rows[2]!.actor).toEqual({ kind: "gateway" });
    expect(JSON.stringify(rows)).not.toContain("5550104477");
    expect(rows[1]!.numberHash).toMatch(/^[0-9a-f]{64}$/);
    // the same number typed with spaces finds it; another number does not
    expect((await ledger.rows({ number: "+1 555 010 4477" })).map((r) => r.seq)).toEqual([2]);
    expect(await ledger.rows({ number: "+15550104478" })).toEqual([]);
    expect((await ledger.rows({ object: { kind: "job", id: "J1" } })).map((r) => r.seq)).toEqual([1, 2]);
    expect((await ledger.rows({ user: "alice" })).map((r) => r.seq)).toEqual([1, 2]);
    expect((await ledger.verify()).broken).toBeNull();
  });

  it("appends inside the caller's transaction: rolled back with it, committed with it", async () => {
    const before = (await ledger.head())!.seq;
    await expect(
      b.store.sql.tx("test", async (t) => {
        await ledger.record(viewed("J3"), t);
        throw new Error("the caller's work failed");
      }),
    ).rejects.toThrow("the caller's work failed");
    expect((await ledger.head())!.seq).toBe(before);
    await b.store.sql.tx("test", (t) => ledger.record(viewed("J3"), t));
    expect((await ledger.head())!.seq).toBe(before + 1);
    const v = await ledger.verify();
    expect(v.broken).toBeNull();
    expect(v.rows).toBe(before + 1);
  });

  it("many appends at once from one gateway keep one chain", async () => {
    const before = (await ledger.head())?.seq ?? 0;
    await Promise.all(Array.from({ length: 40 }, (_, i) => ledger.record(viewed(`C${i}`))));
    // verify only reads: what PostgreSQL's appends left pending is sealed first (SQLite: sealed already)
    await ledger.sealer.sealNow();
    const v = await ledger.verify();
    expect(v).toMatchObject({ rows: before + 40, broken: null });
  });

  it("names the first broken row: edited, deleted, inserted", async () => {
    const sql = b.store.sql;
    const v0 = await ledger.verify();
    expect(v0.broken).toBeNull();
    await sql.run("UPDATE ledger SET actor_id = 'mallory' WHERE seq = 2");
    expect((await ledger.verify()).broken).toMatchObject({ seq: 2, reason: expect.stringContaining("changed") });
    await sql.run("UPDATE ledger SET actor_id = 'alice' WHERE seq = 2");
    expect((await ledger.verify()).broken).toBeNull();
    const row3 = await sql.get<Record<string, unknown>>("SELECT * FROM ledger WHERE seq = 3");
    await sql.run("DELETE FROM ledger WHERE seq = 3");
    expect((await ledger.verify()).broken).toMatchObject({ seq: 3, reason: expect.stringContaining("missing") });
    // put back with another row's seal: the chain does not follow
    const cols = Object.keys(row3!);
    await sql.run(`INSERT INTO ledger (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`, [
      ...cols.map((c) => (c === "prev_hash" ? "f".repeat(64) : row3![c])),
    ]);
    expect((await ledger.verify()).broken).toMatchObject({
      seq: 3,
      reason: expect.stringContaining("does not follow"),
    });
  });
});

describe.skipIf(postgres.missing !== null)("two gateways on one PostgreSQL", () => {
  let b: BackendStore;
  beforeAll(async () => {
    b = await openBackend("postgres", postgres.cluster);
  }, 120_000);
  afterAll(async () => {
    await b?.cleanup();
  });

  it("append at once and keep one chain: no gap, no fork", async () => {
    const other = await b.reopen();
    const ledgers = [new SqlLedger(b.store.sql, KEY), new SqlLedger(other.sql, KEY)];
    const PER = 150;
    // each gateway appends with several transactions in flight at once, as a busy gateway does
    await Promise.all(
      ledgers.map(async (l, g) => {
        const lanes = Array.from({ length: 5 }, async (_, lane) => {
          for (let i = 0; i < PER / 5; i++) await l.record(viewed(`G${g}-${lane}-${i}`));
        });
        await Promise.all(lanes);
      }),
    );
    const rows = await ledgers[1]!.rows();
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 2 * PER }, (_, i) => i + 1));
    expect(new Set(rows.map((r) => r.prevHash)).size).toBe(rows.length);
    // both gateways sealed: each row once, none left pending
    expect(new Set(rows.map((r) => r.object.id)).size).toBe(2 * PER);
    const v = await ledgers[0]!.verify();
    expect(v).toMatchObject({ rows: 2 * PER, broken: null, pending: { count: 0 } });
  }, 120_000);

  it("rows a gateway committed and died before sealing are sealed by another's sweep", async () => {
    const dead = await b.reopen();
    const before = (await new SqlLedger(b.store.sql, KEY).head())?.seq ?? 0;
    // what a killed gateway leaves: its rows committed with their transaction, never sealed
    const orphans = new SqlLedger(dead.sql, KEY).rowsFor([viewed("D1"), viewed("D2"), viewed("D3")]);
    await dead.sql.tx("a gateway's commit", async (t) => {
      for (const f of orphans) await appendLedger(t, f);
    });
    await dead.close();
    const survivor = new SqlLedger(b.store.sql, KEY);
    expect((await survivor.verify()).pending.count).toBe(3);
    survivor.sealer.start(); // the daemon's sweep, as at its start
    try {
      await vi.waitFor(async () => expect((await survivor.verify()).pending.count).toBe(0), { timeout: 10_000 });
    } finally {
      await survivor.sealer.stop();
    }
    const v = await survivor.verify();
    expect(v).toMatchObject({ rows: before + 3, broken: null });
    const sealed = await ledgerRows(b.store.sql, { afterSeq: before });
    expect(sealed.map((r) => r.object_id)).toEqual(["D1", "D2", "D3"]);
  }, 60_000);
});
