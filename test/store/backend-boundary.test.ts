// Every stage depends on the QueueStore interface, never on a backend: only the opener
// (src/store/open.ts) may import a backend's folder, so a second backend drops in there alone.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "../../src");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith(".ts") ? [p] : [];
  });
}

describe("the store backends stay behind QueueStore", () => {
  it("no file outside src/store/ (and its opener) imports a backend, nor one backend the other", () => {
    const offenders: string[] = [];
    for (const file of sources(SRC)) {
      const rel = path.relative(SRC, file);
      if (rel === path.join("store", "open.ts")) continue;
      // a backend's own files import each other, never the other backend's: what both share
      // (the transition table and its SQL, rows, schema parts) lives at the store's root
      const own = /^store[\\/](sqlite|postgres)[\\/]/.exec(rel)?.[1];
      for (const m of readFileSync(file, "utf8").matchAll(/from ["']([^"']+)["']/g)) {
        const target = path.relative(SRC, path.resolve(path.dirname(file), m[1]!));
        const backend = /^store[\\/](sqlite|postgres)[\\/]/.exec(target)?.[1];
        if (backend && backend !== own) offenders.push(`${rel} imports ${m[1]}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
