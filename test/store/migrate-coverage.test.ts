// `faxgate store migrate` and the schema definition stay in step: every table the definition has
// is either copied (by the generic copier or by hand) or deliberately left behind with a reason.
// A table added to the schema without that decision fails here, before an office loses it moving
// to PostgreSQL.
import { describe, expect, it } from "vitest";
import { COPIED_BY_HAND, COPIED_TABLES, NOT_COPIED } from "../../src/store/postgres/migrate-tables.js";
import { TABLES, tableName } from "../../src/store/sql/schema.js";

const copied = [
  ...COPIED_BY_HAND,
  ...COPIED_TABLES.flatMap((t) => [t.table, ...(t.children ?? []).map((c) => c.table)]),
];

describe("store migrate covers the schema", () => {
  it("decides every table of the definition: copied, or left behind with a reason", () => {
    const undecided = TABLES.map((t) => tableName(t, "postgres")).filter(
      (name) => !copied.includes(name) && !(name in NOT_COPIED),
    );
    expect(undecided).toEqual([]);
  });

  it("names no table twice and none the definition lacks", () => {
    const names = new Set(TABLES.map((t) => tableName(t, "postgres")));
    const decided = [...copied, ...Object.keys(NOT_COPIED)];
    expect(decided.filter((n) => !names.has(n))).toEqual([]);
    expect(new Set(decided).size).toBe(decided.length);
    for (const reason of Object.values(NOT_COPIED)) expect(reason.length).toBeGreaterThan(10);
  });

  it("copies parents before the rows that reference them", () => {
    const order = [...COPIED_BY_HAND, ...COPIED_TABLES.map((t) => t.table)];
    for (const t of TABLES) {
      const name = tableName(t, "postgres");
      const i = order.indexOf(name);
      if (i < 0) continue;
      for (const c of t.columns) {
        const parent = c.references?.match(/^(\w+)\(/)?.[1];
        // a child copied with its parent (received_events) is not in `order`
        if (parent) expect(order.indexOf(parent), `${name} -> ${parent}`).toBeLessThan(i);
      }
    }
  });
});
