// Keys and reloads as an operator does them: `faxgate keys rotate --write` against a real service
// (the emulator), and SIGHUP making a running daemon take a new user without a restart.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaxClient, createFaxAgent } from "../../src/fax/client.js";
import { runCli } from "../helpers/cli.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { mergeSections, TEST_USERS, type Sections } from "../helpers/gateway.js";
import { kill, makeRig, startDaemon, type Rig } from "../faults/harness.js";
import { waitUntil } from "../helpers/wait.js";

let rig: Rig;
let agent: ReturnType<typeof createFaxAgent>;
const client = (token: string) => new FaxClient({ baseUrl: rig.emu.baseUrl, apiKey: token, dispatcher: agent });

/** The users as the config file has them now (`keys rotate --write` writes it too). */
function usersOnDisk(): Array<{ name: string; apiKey: string }> {
  return (JSON.parse(readFileSync(rig.configFile, "utf8")) as { users: Array<{ name: string; apiKey: string }> }).users;
}

/** Adds users (after those on disk) and other sections to the config file. */
function addToConfig(add: { users: Sections[] } & Sections): void {
  rig.rewrite((raw) => mergeSections(raw, { ...add, users: [...usersOnDisk(), ...add.users] }));
}

beforeAll(async () => {
  rig = await makeRig();
  agent = createFaxAgent({ ca: rig.emu.caPem });
});
afterAll(async () => {
  await agent.close();
  await rig.agent.close();
  await rig.emu.stop();
  rmSync(rig.dir, { recursive: true, force: true });
});

describe("faxgate keys rotate --write", () => {
  it("creates a working key, writes it into the config, deletes the old one, and never prints either", async () => {
    const me = await client(TEST_KEYS.alice).me();
    const old = await client(TEST_KEYS.admin).createApiKey({
      name: "to rotate",
      userId: me.userId,
      access: "print_driver",
    });
    rig.rewrite((raw) =>
      mergeSections(raw, {
        api: { adminKey: TEST_KEYS.admin },
        users: TEST_USERS.map((u) => (u.name === "alice" ? { ...u, apiKey: old.token } : u)),
      }),
    );

    const r = await runCli(
      ["keys", "rotate", "--user", "alice", "--write", "--grace-seconds", "0", "--config", rig.configFile],
      { cwd: rig.dir },
    );
    expect(r.code, r.stderr).toBe(0);
    const after = readFileSync(rig.configFile, "utf8");
    expect(after).not.toContain(old.token!);
    const newKey = usersOnDisk().find((u) => u.name === "alice")!.apiKey;
    expect((await client(newKey).me()).userId).toBe(me.userId);
    await expect(client(old.token!).me()).rejects.toMatchObject({ code: "API_AUTH" });
    expect(r.stdout).toContain("deleted the old key");
    expect(r.stdout + r.stderr).not.toContain(old.token!);
    expect(r.stdout + r.stderr).not.toContain(TEST_KEYS.admin);

    const list = await runCli(["keys", "list", "--user", "alice", "--json", "--config", rig.configFile], {
      cwd: rig.dir,
    });
    expect(list.code).toBe(0);
    const keys = JSON.parse(list.stdout) as Array<{ uuid: string; token?: string }>;
    expect(keys.some((k) => k.uuid === old.uuid)).toBe(false);
    expect(keys.every((k) => k.token === undefined)).toBe(true);
  });
});

describe("SIGHUP", () => {
  it("a user added to the config can send after a reload, and the daemon keeps running", async () => {
    const daemon = await startDaemon(rig);
    try {
      const send = () =>
        nodemailer
          .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
          .sendMail({ from: "carol@example.com", to: "15551230777@fax.example.com", subject: "hi", text: "cover only" })
          .then(
            (i) => i.response,
            (e: Error & { response?: string }) => e.response ?? e.message,
          );
      expect(await send()).toMatch(/^550 5\.7\.1/);
      addToConfig({ users: [{ name: "carol", email: "carol@example.com", apiKey: TEST_KEYS.aliceBase }] });
      daemon.child.kill("SIGHUP");
      await daemon.out.waitFor(/"msg":"RELOADED users"/);
      expect(await send()).toMatch(/^250 /);
      expect(daemon.child.exitCode).toBeNull();
    } finally {
      await kill(daemon, "SIGTERM");
    }
  });
});

describe("SIGHUP and the secrets file", () => {
  it("re-reads the secrets file: a changed key is used after the reload, a removed one is refused by name", async () => {
    const secrets = path.join(rig.dir, "faxgate.env");
    // dora's keys are her own: one given to another user too is refused (issue 48 item 7)
    const mint = async (owner: string) => {
      const me = await client(owner).me();
      return (await client(TEST_KEYS.admin).createApiKey({ name: "dora", userId: me.userId, access: "print_driver" }))
        .token!;
    };
    const first = await mint(TEST_KEYS.alice);
    writeFileSync(secrets, `CAROL_KEY=${first}\n`);
    // a user whose key comes from the secrets file
    addToConfig({ users: [{ name: "dora", email: "dora@example.com", apiKey: "${CAROL_KEY}" }], secretsFile: secrets });
    const daemon = await startDaemon(rig);
    try {
      const send = (to: string) =>
        nodemailer
          .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
          .sendMail({ from: "dora@example.com", to: `${to}@fax.example.com`, subject: "hi", text: "cover only" })
          .then(
            (i) => i.response,
            (e: Error & { response?: string }) => e.response ?? e.message,
          );
      const sentWith = (token: string, number: string) =>
        waitUntil(
          async () =>
            (await client(token).history({ query: number, limit: 50 })).rows.some((r) => r.faxNumber?.endsWith(number)),
          `a fax to ${number} in the key's history`,
          20_000,
          200,
        ).then(
          () => true,
          () => false,
        );
      expect(await send("15551238801")).toMatch(/^250 /);
      expect(await sentWith(first, "5551238801")).toBe(true);

      writeFileSync(secrets, "# emptied\n");
      daemon.child.kill("SIGHUP");
      await daemon.out.waitFor(/CAROL_KEY[^\n]*RELOAD refused|RELOAD refused[^\n]*CAROL_KEY/);

      const fresh = await mint(TEST_KEYS.bob);
      writeFileSync(secrets, `CAROL_KEY=${fresh}\n`);
      daemon.child.kill("SIGHUP");
      await daemon.out.waitFor(/"why":"SIGHUP"[^\n]*RELOADED users|RELOADED users[^\n]*"why":"SIGHUP"/);
      expect(await send("15551238802")).toMatch(/^250 /);
      expect(await sentWith(fresh, "5551238802")).toBe(true);
      expect(daemon.child.exitCode).toBeNull();
    } finally {
      await kill(daemon, "SIGTERM");
    }
  }, 120_000);
});
