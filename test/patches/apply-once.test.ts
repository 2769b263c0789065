// scripts/apply-patches.mjs applies a hunk wherever it finds the hunk's original text, and counts a
// patch as applied when it finds none: a hunk whose original is still inside its own result (an
// insertion whose context repeats around it) would be applied again at every install. No hunk of
// patches/ may leave its original in the installed, patched file.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { packageDir, parsePatch } from "../../scripts/apply-patches.mjs";

const dir = path.resolve(import.meta.dirname, "../../patches");

describe("patches/ apply once", () => {
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".patch"))) {
    it(`${name}: no hunk's original is left in the patched file`, () => {
      const pkg = name.slice(0, name.indexOf("+")).replace("__", "/");
      const files = parsePatch(readFileSync(path.join(dir, name), "utf8")) as Array<{
        path: string;
        hunks: Array<{ before: string[]; after: string[] }>;
      }>;
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) {
        const body = readFileSync(path.join(packageDir(pkg), f.path), "utf8");
        f.hunks.forEach((h, k) => {
          expect(body.includes(h.after.join("\n")), `${f.path} hunk ${k} applied`).toBe(true);
          expect(body.includes(h.before.join("\n")), `${f.path} hunk ${k} would apply again`).toBe(false);
        });
      }
    });
  }
});
