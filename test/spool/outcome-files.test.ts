// moveInto never replaces what is already in done/ or failed/: a name that is taken gives
// "name (2)", whether the move is a link (files) or a rename (what cannot be linked).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { localCalls, poolCalls } from "../../src/fs/folder-calls.js";
import { moveInto } from "../../src/spool/outcome-files.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function folders(): { work: string; done: string } {
  dir = tempFolder("outcome");
  const work = path.join(dir, "work");
  const done = path.join(dir, "done");
  mkdirSync(work);
  mkdirSync(done, { mode: 0o770 });
  return { work, done };
}

// on this thread (a local disk) and through the thread pool (a network file system)
describe.each([{ calls: localCalls() }, { calls: poolCalls }])(
  "moveInto (file calls here: $calls.here)",
  ({ calls }) => {
    it("a file whose name is taken in the folder gets the next free name; the one there is kept", async () => {
      const { work, done } = folders();
      writeFileSync(path.join(done, "letter.pdf"), "first");
      for (const body of ["second", "third"]) {
        writeFileSync(path.join(work, "x"), body);
        await moveInto(path.join(work, "x"), done, "letter.pdf", { sync: false, folder: { calls } });
      }
      expect(readdirSync(done).sort()).toEqual(["letter (2).pdf", "letter (3).pdf", "letter.pdf"]);
      expect(readFileSync(path.join(done, "letter.pdf"), "utf8")).toBe("first");
      expect(readFileSync(path.join(done, "letter (3).pdf"), "utf8")).toBe("third");
      expect(readdirSync(work)).toEqual([]);
    });

    it("what cannot be linked is renamed, and never onto a name that is taken", async () => {
      const { work, done } = folders();
      // a folder cannot be hard-linked (EPERM, where its name is free), and a rename onto an empty
      // folder would replace it
      mkdirSync(path.join(done, "scan"));
      writeFileSync(path.join(done, "scan", "kept"), "kept");
      mkdirSync(path.join(work, "scan"));
      mkdirSync(path.join(done, "empty"));
      mkdirSync(path.join(work, "empty"));
      expect(path.basename(await moveInto(path.join(work, "scan"), done, "scan", { folder: { calls } }))).toBe(
        "scan (2)",
      );
      expect(path.basename(await moveInto(path.join(work, "empty"), done, "empty", { folder: { calls } }))).toBe(
        "empty (2)",
      );
      mkdirSync(path.join(work, "new"));
      expect(path.basename(await moveInto(path.join(work, "new"), done, "new", { folder: { calls } }))).toBe("new");
      expect(readdirSync(done).sort()).toEqual(["empty", "empty (2)", "new", "scan", "scan (2)"]);
      expect(readdirSync(path.join(done, "scan"))).toEqual(["kept"]);
    });
  },
);
