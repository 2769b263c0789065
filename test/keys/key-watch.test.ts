// Key expiry: the daemon warns ahead of expiresAt and, close to it, rotates the key itself,
// against the emulator over real HTTPS with a real store.
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFaxAgent, FaxClient } from "../../src/fax/client.js";
import { effectiveUsers } from "../../src/keys/key-overrides.js";
import { KeyWatch } from "../../src/keys/key-watch.js";
import { silentLogger } from "../../src/log/logger.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { UserConfig } from "../../src/config/schema.js";
import { startTestEmulator, TEST_KEYS } from "../helpers/emulator.js";
import { tempFolder } from "../tmp-dir.js";

const DAY = 86_400_000;
type Emu = Awaited<ReturnType<typeof startTestEmulator>>;

describe("key expiry watch", () => {
  let emu: Emu;
  let dir: string;
  let agent: ReturnType<typeof createFaxAgent>;
  const client = (token: string) => new FaxClient({ baseUrl: emu.baseUrl, apiKey: token, dispatcher: agent });

  beforeAll(async () => {
    emu = await startTestEmulator();
    agent = createFaxAgent({ caFile: emu.caFile });
    dir = tempFolder("keys");
  });
  afterAll(async () => {
    await agent.close();
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function keyFor(days: number): Promise<{ token: string; uuid: string; userId: string }> {
    const me = await client(TEST_KEYS.alice).me();
    const k = await client(TEST_KEYS.admin).createApiKey({
      name: `expiring in ${days}d`,
      userId: me.userId,
      access: "print_driver",
      expiresAt: new Date(Date.now() + days * DAY).toISOString(),
    });
    return { token: k.token!, uuid: k.uuid, userId: me.userId };
  }

  function watch(users: UserConfig[], dataDir: string, store: SqliteStore, rotated: string[]) {
    return new KeyWatch({
      baseUrl: emu.baseUrl,
      adminKey: TEST_KEYS.admin,
      agent,
      dataDir,
      users: () => effectiveUsers(users, dataDir),
      configKeyOf: (n) => users.find((u) => u.name === n)!.apiKey,
      store,
      onRotated: (u) => void rotated.push(u),
      logger: silentLogger(),
      clock: { now: () => Date.now() },
    });
  }

  it("warns a week ahead with a key-expiry notification, once", async () => {
    const data = path.join(dir, "warn");
    const store = SqliteStore.open({ dataDir: data });
    try {
      const k = await keyFor(5);
      const users: UserConfig[] = [{ name: "alice", email: "alice@example.com", aliases: [], apiKey: k.token }];
      const w = watch(users, data, store, []);
      await w.runOnce();
      await w.runOnce();
      const n = (await store.claimNotifications("test", 10, 60_000)).filter((x) => x.kind === "key-expiry");
      expect(n).toHaveLength(1);
      expect(n[0]!.user).toBe("alice");
      expect(JSON.stringify(n[0]!.payload)).not.toContain(k.token);
    } finally {
      store.close();
    }
  });

  it("rotates a key about to expire: new key works, kept in keys.json, old key deleted", async () => {
    const data = path.join(dir, "rotate");
    const store = SqliteStore.open({ dataDir: data });
    try {
      const k = await keyFor(1);
      const users: UserConfig[] = [{ name: "alice", email: "alice@example.com", aliases: [], apiKey: k.token }];
      const rotated: string[] = [];
      await watch(users, data, store, rotated).runOnce();
      expect(rotated).toEqual(["alice"]);
      const now = effectiveUsers(users, data)[0]!.apiKey;
      expect(now).not.toBe(k.token);
      expect((await client(now).me()).userId).toBe(k.userId);
      const keys = await client(TEST_KEYS.admin).listApiKeys(k.userId);
      expect(keys.some((x) => x.uuid === k.uuid)).toBe(false);
      await expect(client(k.token).me()).rejects.toMatchObject({ code: "API_AUTH" });
      expect(readFileSync(path.join(data, "keys.json"), "utf8")).toContain('"replaces"');
      // once the admin puts a new key into the config, the config wins again
      expect(effectiveUsers([{ ...users[0]!, apiKey: "something-else" }], data)[0]!.apiKey).toBe("something-else");
    } finally {
      store.close();
    }
  });
});
