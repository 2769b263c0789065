// Keys follow people (issue 50 point 2), with the real emulator over HTTPS, SCIM and SMTP: a
// person pushed over SCIM and mapped to a service user gets a key minted with the admin key,
// sealed in the store (not readable in the database file), and can fax; set active:false, the
// key is deleted at the service and their mail is refused.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFaxAgent, FaxClient } from "../../src/fax/client.js";
import { PersonKeys } from "../../src/store/index.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { startGateway, TEST_USERS, type TestGateway } from "../helpers/gateway.js";
import { converse } from "../helpers/raw-smtp.js";
import { waitUntil } from "../helpers/wait.js";

const TOKEN = "scim-token-for-tests-0123456789abcdef";
const SEAL = "seal-key-for-tests-0123456789abcdef";
const USER = "urn:ietf:params:scim:schemas:core:2.0:User";
const PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

let tg: TestGateway | null = null;
let agent: ReturnType<typeof createFaxAgent> | null = null;
afterEach(async () => {
  await tg?.stop();
  await agent?.close();
  tg = null;
});

async function scim(method: string, p: string, body?: unknown) {
  const res = await fetch(`${tg!.url("web")}/scim/v2${p}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/scim+json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : null };
}

const MAIL = "From: carol@example.com\nTo: 15551234567@fax.localhost\nSubject: hello\n\nA page for the fax.\n";

/** Every byte of the store's files (the SQLite file and its WAL). */
function storeBytes(data: string): string {
  return readdirSync(data)
    .filter((f) => /\.(db|sqlite)(-wal)?$/.test(f) || f.endsWith("-wal"))
    .map((f) => readFileSync(path.join(data, f)).toString("latin1"))
    .join("");
}

describe("keys follow people", () => {
  it("minted on mapping, sealed in the store, used to fax, deleted on active:false", async () => {
    tg = await startGateway({
      name: "keys-follow",
      config: {
        api: { adminKey: TEST_KEYS.admin },
        web: { listen: "127.0.0.1:0" },
        smtp: { listen: ["127.0.0.1:0"] },
        directory: { scim: { token: TOKEN }, keys: { sealKey: SEAL, lifetime: "30d" } },
      },
    });
    agent = createFaxAgent({ ca: tg.emu.caPem });
    const admin = new FaxClient({ baseUrl: tg.emu.baseUrl, apiKey: TEST_KEYS.admin, dispatcher: agent });
    const bobId = (await new FaxClient({ baseUrl: tg.emu.baseUrl, apiKey: TEST_KEYS.bob, dispatcher: agent }).me())
      .userId;
    const minted = async () => (await admin.listApiKeys(bobId)).filter((k) => k.name === "faxgate carol");

    const created = await scim("POST", "/Users", {
      schemas: [USER],
      userName: "carol",
      active: true,
      emails: [{ primary: true, type: "work", value: "carol@example.com" }],
    });
    expect(created.status).toBe(201);
    // no service user id yet: nothing minted
    expect(await minted()).toEqual([]);

    // what `faxgate directory map carol <id>` stores, then its SIGHUP
    await new PersonKeys(tg.gw.store.sql).map("carol", bobId);
    await tg.reloadWith((c) => c);
    const [key] = await minted();
    expect(key).toMatchObject({ userId: bobId, access: "print_driver" });
    expect(Date.parse(key!.expiresAt!) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const token = key!.token!;
    expect(token).toBeTruthy();

    // carol faxes (real SMTP), the job goes out with her minted key
    const replies = await converse(tg.smtpPort, "carol@example.com", ["15551234567@fax.localhost"], MAIL);
    expect(replies.at(-2), replies.join(" | ")).toMatch(/^250 /);
    const job = await waitUntil(async () => {
      const jobs = await tg!.gw.store.listJobs();
      return jobs.find((j) => j.user === "carol" && j.state === "delivered") ?? null;
    }, "carol's fax delivered");
    expect(job.user).toBe("carol");

    // sealed at rest: the token is nowhere in the database file nor in the log
    await tg.gw.store.sql.run("PRAGMA wal_checkpoint(TRUNCATE)").catch(() => undefined);
    const bytes = storeBytes(tg.config.data);
    const sealed = (await new PersonKeys(tg.gw.store.sql).all())[0]!.sealedToken!;
    expect(bytes).toContain(sealed);
    expect(bytes.includes(token), "the token in clear in the database file").toBe(false);
    expect(tg.logs.join("\n").includes(token), "the token in the log").toBe(false);

    // Entra disables her: the key is gone at the service, her mail refused
    const off = await scim("PATCH", `/Users/${created.body!.id}`, {
      schemas: [PATCH],
      Operations: [{ op: "Replace", path: "active", value: "False" }],
    });
    expect(off.status).toBe(200);
    expect(await minted()).toEqual([]);
    expect((await converse(tg.smtpPort, "carol@example.com", ["15551234567@fax.localhost"], null))[2] ?? "").toMatch(
      /^550 5\.7\.1 .*has left/,
    );
    const stored = await new PersonKeys(tg.gw.store.sql).all();
    expect(stored).toMatchObject([{ user: "carol", mappedUserId: bobId, keyId: null, sealedToken: null }]);
    const ledger = await tg.gw.store.sql.all<{ action: string; detail: string }>(
      "SELECT action, detail FROM ledger WHERE action IN ('key-minted','key-deleted') ORDER BY seq",
    );
    expect(ledger.map((r) => r.action)).toEqual(["key-minted", "key-deleted"]);
    expect(JSON.stringify(ledger).includes(token), "the token in the ledger").toBe(false);
  }, 120_000);

  it("a config person without apiKey gets a minted key, deleted when they leave users:", async () => {
    const dave = { name: "dave", email: "dave@example.com" };
    tg = await startGateway({
      name: "keys-config",
      config: {
        api: { adminKey: TEST_KEYS.admin },
        smtp: { listen: ["127.0.0.1:0"] },
        users: [...TEST_USERS, dave],
        directory: { keys: { sealKey: SEAL, lifetime: "30d" } },
      },
    });
    agent = createFaxAgent({ ca: tg.emu.caPem });
    const admin = new FaxClient({ baseUrl: tg.emu.baseUrl, apiKey: TEST_KEYS.admin, dispatcher: agent });
    const bobId = (await new FaxClient({ baseUrl: tg.emu.baseUrl, apiKey: TEST_KEYS.bob, dispatcher: agent }).me())
      .userId;
    const minted = async () => (await admin.listApiKeys(bobId)).filter((k) => k.name === "faxgate dave");
    // no service user id yet: nothing to mint for, and the others are untouched
    expect(await minted()).toEqual([]);

    // the operator writes dave's service user id into the config and reloads
    await tg.reloadWith((c) => ({
      ...c,
      users: c.users.map((u) => (u.name === "dave" ? { ...u, serviceUserId: bobId } : u)),
    }));
    const [key] = await minted();
    expect(key).toMatchObject({ userId: bobId, access: "print_driver" });
    const token = key!.token!;
    const daveMail = MAIL.replace("carol@", "dave@");
    const replies = await converse(tg.smtpPort, "dave@example.com", ["15551234567@fax.localhost"], daveMail);
    expect(replies.at(-2), replies.join(" | ")).toMatch(/^250 /);
    await waitUntil(
      async () => (await tg!.gw.store.listJobs()).find((j) => j.user === "dave" && j.state === "delivered") ?? null,
      "dave's fax delivered",
    );
    expect(tg.logs.join("\n").includes(token), "the token in the log").toBe(false);

    // dave leaves users: (no directory source: the config is the whole list), his key goes
    await tg.reloadWith((c) => ({ ...c, users: c.users.filter((u) => u.name !== "dave") }));
    expect(await minted()).toEqual([]);
    const actions = await tg.gw.store.sql.all<{ action: string }>(
      "SELECT action FROM ledger WHERE action IN ('key-minted','key-deleted') ORDER BY seq",
    );
    expect(actions.map((r) => r.action)).toEqual(["key-minted", "key-deleted"]);
  }, 120_000);
});
