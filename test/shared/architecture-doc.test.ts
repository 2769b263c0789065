// docs/architecture.md's import graph is generated from src/ (scripts/architecture-diagram.mjs):
// it must be what the script writes today, not a drawing that drifts from the code.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../../scripts/architecture-diagram.mjs", import.meta.url));

describe("docs/architecture.md", () => {
  it("shows the import graph of src/'s folders as the generator draws it", () => {
    const r = spawnSync(process.execPath, [SCRIPT, "--check"], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/matches the import graph/);
  });
});
