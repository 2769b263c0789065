// Where the ledger's number key comes from: given (secrets file or environment), else made once in
// a SQLite gateway's data folder (0600) and read back after; a gateway sharing PostgreSQL without
// one is refused, naming the key.
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LEDGER_KEY_FILE, ledgerNumberKey } from "../../src/ledger/number-key.js";

describe("the ledger's number key", () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), "faxgate-ledger-key-"));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("is made once in a single gateway's data folder, readable by its owner only", () => {
    const d = dir();
    expect(ledgerNumberKey({ dataDir: d, shared: false, given: undefined, create: false })).toBeNull();
    const made = ledgerNumberKey({ dataDir: d, shared: false, given: undefined, create: true })!;
    const file = path.join(d, LEDGER_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8").trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(ledgerNumberKey({ dataDir: d, shared: false, given: undefined, create: true })).toEqual(made);
    expect(ledgerNumberKey({ dataDir: d, shared: false, given: undefined, create: false })).toEqual(made);
  });

  it("given, wins over the data folder's; too short, is refused", () => {
    const d = dir();
    const given = "g".repeat(40);
    expect(ledgerNumberKey({ dataDir: d, shared: true, given, create: true })).toEqual(Buffer.from(given));
    expect(() => ledgerNumberKey({ dataDir: d, shared: false, given: "short", create: true })).toThrow(
      /FAXGATE_LEDGER_KEY is too short/,
    );
  });

  it("is required of gateways sharing PostgreSQL, by name", () => {
    expect(() => ledgerNumberKey({ dataDir: dir(), shared: true, given: undefined, create: true })).toThrow(
      /FAXGATE_LEDGER_KEY is not set: gateways sharing a PostgreSQL queue/,
    );
  });
});
