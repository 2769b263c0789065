// Who has left (directory/leavers.ts), on a real store: a person the directory listed and lists no
// more is a leaver by name and by every address, a restart (a new Leavers on the same store) still
// knows them, and someone listed again (or kept by users:) is no leaver.
import { afterEach, describe, expect, it } from "vitest";
import { Leavers } from "../../src/directory/leavers.js";
import type { DirectoryPerson } from "../../src/directory/person.js";
import { tempStore } from "../helpers/store.js";

const person = (name: string, aliases: string[] = []): DirectoryPerson => ({
  source: "ldap",
  id: `uid=${name}`,
  name,
  email: `${name}@example.com`,
  aliases,
  role: "user",
  inbox: [],
});

let temp: ReturnType<typeof tempStore> | null = null;
afterEach(() => temp?.cleanup());

describe("leavers", () => {
  it("gone from the list: left, by name and address, across a restart; listed again: back", async () => {
    temp = tempStore();
    const at = new Date("2026-11-29T05:00:00Z");
    const l = new Leavers(temp.store);
    await l.load();
    // the first list is the baseline: nobody has left
    expect(await l.update([person("erin", ["e.r@example.org"]), person("fay")], [], at)).toEqual([]);
    expect(l.leaver("erin")).toBeNull();
    const gone = await l.update([person("fay")], [], at);
    expect(gone.map((g) => g.name)).toEqual(["erin"]);
    expect(l.leaver("ERIN@example.com")).toBe("erin");
    expect(l.leaver("e.r@example.org")).toBe("erin");
    expect(l.leaver("fay@example.com")).toBeNull();

    const again = new Leavers(temp.store);
    await again.load();
    expect(again.leaver("erin")).toBe("erin");
    // listed again: no leaver any more, here and after a restart
    await again.update([person("fay"), person("erin")], [], at);
    expect(again.leaver("erin")).toBeNull();
    const third = new Leavers(temp.store);
    await third.load();
    expect(third.list()).toEqual([]);
    // a leaver whose name users: keeps is no leaver
    await third.update([person("fay"), person("erin")], [], at);
    await third.update([person("fay")], ["erin"], at);
    expect(third.leaver("erin")).toBeNull();
  });
});
