// `faxgate directory map` as an operator runs it: a person the directory's stored list lacks is
// refused and says why; a SCIM person is mapped in the store; doctor's keys line names who is
// still unmapped.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { writeDirectoryEntry } from "../../src/store/sql/directory.js";
import { PersonKeys } from "../../src/store/index.js";
import { tempStore } from "../helpers/store.js";
import { runCli } from "../helpers/cli.js";

const scimUser = (userName: string) => ({
  schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
  userName,
  active: true,
  emails: [{ primary: true, value: `${userName}@example.com` }],
});

describe("faxgate directory map", () => {
  it("maps a directory person, refuses an unknown one, and doctor lists the unmapped", async () => {
    const temp = tempStore();
    try {
      for (const [id, name] of [
        ["u1", "dana"],
        ["u2", "eli"],
      ] as const)
        await writeDirectoryEntry(
          temp.store.sql,
          "user",
          id,
          () => ({ name, externalId: null, body: { ...scimUser(name), id } }),
          () => new Error("taken"),
        );
      const configFile = path.join(temp.dir, "faxgate.json");
      writeFileSync(
        configFile,
        JSON.stringify({
          api: { baseUrl: "https://fax.example.test" },
          data: path.join(temp.dir, "data"),
          users: [{ name: "alice", email: "alice@example.com", apiKey: "k" }],
          directory: { scim: { token: "t".repeat(32) }, keys: { sealKey: "s".repeat(32) } },
          // doctor converts a page when the converter is on: seconds, and not what this is about
          office: { soffice: false },
        }),
      );
      const unknown = await runCli([
        "directory",
        "map",
        "zed",
        "11111111-2222-3333-4444-555555555555",
        "--config",
        configFile,
      ]);
      expect(unknown.code).not.toBe(0);
      expect(unknown.stderr).toMatch(/no person "zed".*nothing was mapped/);

      const ok = await runCli([
        "directory",
        "map",
        "dana",
        "11111111-2222-3333-4444-555555555555",
        "--config",
        configFile,
      ]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain("dana mapped to service user");
      expect(await new PersonKeys(temp.store.sql).all()).toMatchObject([
        { user: "dana", mappedUserId: "11111111-2222-3333-4444-555555555555", keyId: null },
      ]);

      const doctor = await runCli(["doctor", "--config", configFile], { timeoutMs: 60_000 });
      expect(doctor.stdout).toMatch(/WARN {2}directory keys: 1 unmapped .*: eli\n/);
    } finally {
      temp.cleanup();
    }
  }, 120_000);
});
