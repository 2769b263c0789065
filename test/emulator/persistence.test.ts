// State survives a restart: the certificate, keys created through the API, faxes and their
// documents, and the lifecycle (computed from the clock, not from timers).
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/emulator.js";
import { startTestEmulator, TEST_KEYS, TEST_SEED } from "../helpers/emulator.js";
import { apiFor, form, manualClock } from "./api.js";
import { tempFolder } from "../tmp-dir.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});
const tmp = async () => {
  const d = tempFolder("test");
  dirs.push(d);
  return d;
};

describe("restart", () => {
  it("keeps certificate, keys, faxes, documents and lifecycle; seeding again adds nothing twice", async () => {
    const dataDir = await tmp();
    const clock = manualClock();
    const first = await startTestEmulator({ dataDir, clock, delayMs: 10_000 });
    let api = apiFor(first);
    const aliceId = (await api.get("/v1/me", TEST_KEYS.alice)).json.userId;
    const key = (
      await api.call("POST", "/api-keys", TEST_KEYS.admin, { name: "later", userId: aliceId, access: "base" })
    ).json;
    const fax = (
      await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550100001", coverPage: "true" }))
    ).json;
    const pdf = (await api.get(`/v1/fax/${fax.messageId}/download`, TEST_KEYS.alice)).bytes;
    const contactsBefore = (await api.get("/v1/contacts", TEST_KEYS.alice)).json.count;
    await api.close();
    await first.close();

    clock.advance(10_000);
    const second = await startTestEmulator({ dataDir, clock, delayMs: 10_000 });
    api = apiFor(second);
    try {
      expect(second.caPem).toBe(first.caPem);
      expect((await api.get("/v1/me", key.token)).json.userId).toBe(aliceId);
      const info = (await api.get(`/v1/fax/${fax.messageId}/info`, TEST_KEYS.alice)).json;
      expect(info).toMatchObject({ status: "failed", errorCode: "6200" });
      expect((await api.get(`/v1/fax/${fax.messageId}/download`, TEST_KEYS.alice)).bytes.equals(pdf)).toBe(true);
      expect((await api.get("/v1/contacts", TEST_KEYS.alice)).json.count).toBe(contactsBefore);
      expect(second.keys.filter((k) => k.token === TEST_KEYS.alice)).toHaveLength(1);
      expect(second.accountId).toBe(first.accountId);
    } finally {
      await api.close();
      await second.stop();
    }
  });

  it("without a seed: one admin user with an admin and a print_driver key, the same after restart", async () => {
    const dataDir = await tmp();
    const a = await startEmulator({ dataDir });
    const keysA = a.keys;
    await a.close();
    expect(keysA.map((k) => k.access).sort()).toEqual(["admin", "print_driver"]);
    expect(a.adminKey).toBe(keysA.find((k) => k.access === "admin")?.token);
    const b = await startEmulator({ dataDir });
    try {
      expect(b.keys).toEqual(keysA);
      const api = apiFor(b);
      expect((await api.get("/v1/me", b.adminKey)).json.userRole).toBe("admin");
      await api.close();
    } finally {
      await b.close();
    }
  });

  it("reads a YAML or JSON seed file; a later seed adds new users and keys only", async () => {
    const dataDir = await tmp();
    const yamlFile = path.join(dataDir, "seed.yaml");
    await writeFile(
      yamlFile,
      [
        "account: {accountName: Yaml Co, timezone: Europe/Berlin}",
        "users:",
        "  - email: carol@example.com",
        "    firstName: Carol",
        "    userRole: admin",
        "    keys: [{name: adm, access: admin, token: carol-admin}]",
      ].join("\n"),
    );
    const a = await startEmulator({ dataDir, seed: yamlFile });
    expect(a.adminKey).toBe("carol-admin");
    await a.close();
    const jsonFile = path.join(dataDir, "seed.json");
    await writeFile(
      jsonFile,
      JSON.stringify({
        users: [
          {
            email: "carol@example.com",
            firstName: "Changed",
            keys: [
              { name: "adm", access: "admin", token: "carol-admin" },
              { name: "p", access: "print_driver", token: "carol-print" },
            ],
          },
        ],
      }),
    );
    const b = await startEmulator({ dataDir, seed: jsonFile });
    const api = apiFor(b);
    try {
      const me = (await api.get("/v1/me", "carol-print")).json;
      expect(me).toMatchObject({ firstName: "Carol", account: { accountName: "Yaml Co", timezone: "Europe/Berlin" } });
      expect(b.keys.map((k) => k.token)).toEqual(["carol-admin", "carol-print"]);
    } finally {
      await api.close();
      await b.close();
    }
    expect(await readFile(path.join(dataDir, "ca.pem"), "utf8")).toContain("BEGIN CERTIFICATE");
  });

  it("refuses a seed key with an unknown access level", async () => {
    const dataDir = await tmp();
    const bad = {
      ...TEST_SEED,
      users: [{ email: "x@example.com", keys: [{ name: "x", access: "root" as never, token: "t" }] }],
    };
    await expect(startEmulator({ dataDir, seed: bad })).rejects.toThrow(/access level/);
  });
});
