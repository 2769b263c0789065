// A shipped schema step has run on users' databases: its text must never change (a change would
// leave old and new installs with different schemas). New steps are appended, and their digest
// added here. The helpers the steps share (rebuildJobs, receivedTables, signedUsesTable,
// ledgerTable) are held by this too.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PG_MIGRATIONS } from "../../src/store/postgres/schema.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";

const digest = (text: string): string => createHash("sha256").update(text).digest("hex").slice(0, 16);

const SHIPPED = {
  sqlite: [
    "05d8fa9f32c7069b",
    "1dbfe17b854b1de6",
    "b24fa59d931dcd4c",
    "d6823479480e75dd",
    "f83802e44b90d623",
    "7fad58bc15db9895",
    "a8b9d7efc946cac3",
    "5f235f8ef53d8226",
  ],
  postgres: ["c328046060d11c68", "2afade83c8eb7742", "de64eda94e4a1a8e", "a8b9d7efc946cac3", "5f235f8ef53d8226"],
};

describe("shipped schema steps", () => {
  it("SQLite's steps keep their text", () => {
    expect(MIGRATIONS.slice(0, SHIPPED.sqlite.length).map(digest)).toEqual(SHIPPED.sqlite);
  });
  it("PostgreSQL's steps keep their text", () => {
    expect(PG_MIGRATIONS.slice(0, SHIPPED.postgres.length).map(digest)).toEqual(SHIPPED.postgres);
  });
});
