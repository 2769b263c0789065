// Whose a received fax is, against a whole gateway and the emulator over HTTPS, by both doors: the
// user the service's record names (`users` in the fax info), not whichever configured key saw it
// first. "frontdesk" holds the account's admin key, which sees every user's faxes in its history;
// a fax to bob's number is bob's whether frontdesk is polled before him or after, whether the poll
// or a push brings it, and whatever user id the push carries. A fax naming no configured user is
// the user's whose key found it (docs/inbound.md). Then the rule case by case (several named,
// email, an identity unreadable for now), and a kept fax whose routing another key's sighting ends.
import { validateConfig } from "../../src/config/load.js";
import { FaxgateError } from "../../src/errors.js";
import { attributeReceived, type ServiceSelf } from "../../src/inbound/attribution.js";
import { afterEach, describe, expect, it } from "vitest";
import { apiFor, form, type Api } from "../emulator/api.js";
import { TEST_KEYS, TEST_SEED } from "../helpers/emulator.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { testIntake } from "../helpers/collaborators.js";
import { receivedInput, tempStore, type TempStore } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { PASSWORD, postEvent } from "../webhooks/rig.js";
import { createLogger } from "../../src/log/logger.js";

const FRONT = { name: "frontdesk", email: "admin@example.com", apiKey: TEST_KEYS.admin };
const BOB = { name: "bob", email: "bob@example.com", apiKey: TEST_KEYS.bob };
const BOB_LINE = "+15550100444";
// bob's own number at the service (every other seeded user keeps the seed's default)
const SEED = {
  ...TEST_SEED,
  users: TEST_SEED.users!.map((u) => (u.email === BOB.email ? { ...u, phone: BOB_LINE.slice(1) } : u)),
};

let rig: TestGateway | null = null;
let api: Api | null = null;
afterEach(async () => {
  await api?.close();
  await rig?.stop();
  rig = api = null;
});

/** A fax arriving at the service: to a number (its user's), or for a user named by email (on a number given). */
async function arrive(a: Api, to: { number: string } | { email: string; number?: string }): Promise<string> {
  const fields: Record<string, string> =
    "email" in to ? { email: to.email, ...(to.number ? { to: to.number } : {}) } : { to: to.number };
  const r = await a.call(
    "POST",
    "/_emulator/inbound",
    TEST_KEYS.admin,
    form({ ...fields, callerId: "+15557654321" }, [["in.txt", "hello", "text/plain"]]),
  );
  if (r.status !== 200) throw new Error(`the emulator refused the inbound fax: ${r.status} ${r.text}`);
  return r.json.messageId as string;
}

type User = { name: string; email: string; apiKey: string };

function config(users: User[], door: "poll" | "webhook") {
  return ({ dir }: { dir: string }) => ({
    users,
    notify: {
      from: "faxgate@example.com",
      transport: `outbox:${dir}/outbox`,
      // by the poll: the faxes already there at start, at once; by the webhook: none, and no poll
      inbound: { enabled: true, interval: door === "poll" ? "1s" : "1h", mailBacklog: door === "poll" },
    },
    inbound: {
      groups: { "bobs-desk": { members: ["bob"] }, front: { members: ["frontdesk"] } },
      routes: [{ name: "bob's faxes", match: { user: "bob" }, deliver: [{ inbox: "bobs-desk" }] }],
      default: [{ inbox: "front" }],
    },
    ...(door === "webhook"
      ? {
          webhooks: {
            listen: "127.0.0.1:0",
            url: "https://fax.example.com/faxgate/events",
            username: "faxgate",
            password: PASSWORD,
            pollInterval: "1h",
          },
        }
      : {}),
  });
}

async function kept(r: TestGateway, messageId: string) {
  const fax = await waitUntil(
    async () => (await r.gw.store.listReceived({ messageId }))[0],
    `the received fax ${messageId} kept`,
  );
  await waitUntil(
    async () => (await r.gw.store.listReceivedEvents(fax.id)).some((e) => e.action === "routed"),
    "it routed",
  );
  const events = await r.gw.store.listReceivedEvents(fax.id);
  const notices = (await r.gw.store.listNotifications({ kind: "inbound" })).filter(
    (n) => n.dedupeKey === `inbound:${messageId}`,
  );
  return { user: fax.user, groups: fax.groups, stored: events[0]!.detail, notified: notices.map((n) => n.user) };
}

describe("a received fax is the user's the service names", () => {
  it.each([
    { order: "frontdesk (admin key) first", users: [FRONT, BOB] },
    { order: "bob first", users: [BOB, FRONT] },
  ])("by the poll, $order", async ({ users }) => {
    let toBob = "";
    let toAlice = "";
    rig = await startGateway({
      name: "attrib-poll",
      emulator: { seed: SEED },
      // the faxes are there before the first poll: both keys see them in the same look
      config: async (at) => {
        const a = apiFor(at.emu);
        try {
          toBob = await arrive(a, { number: BOB_LINE });
          // alice is not a configured user: only frontdesk's admin key sees her fax
          toAlice = await arrive(a, { email: "alice@example.com" });
        } finally {
          await a.close();
        }
        return config(users, "poll")(at);
      },
    });
    expect(await kept(rig, toBob)).toEqual({
      user: "bob",
      groups: ["bobs-desk"],
      stored: expect.stringMatching(/^received for bob \(poll\)/),
      notified: ["bob"],
    });
    expect(await kept(rig, toAlice)).toMatchObject({ user: "frontdesk", groups: ["front"], notified: ["frontdesk"] });
    // one fax info call per new fax: bob's, seen again by the other key once kept, costs none more
    const a = apiFor(rig.emu);
    try {
      const calls = (await a.get("/_emulator/requests", TEST_KEYS.admin)).json as Record<string, number>;
      expect(Object.entries(calls).filter(([k]) => k.endsWith("/info"))).toEqual([["GET /v1/fax/:id/info", 2]]);
    } finally {
      await a.close();
    }
  });

  it("by the webhook, whatever user id the push names, and by the service's own push", async () => {
    rig = await startGateway({
      name: "attrib-hook",
      emulator: { seed: SEED },
      config: config([FRONT, BOB], "webhook"),
    });
    api = apiFor(rig.emu);
    // the first look at each user's history (at start) is over before any fax arrives
    await waitUntil(
      () => rig!.logs.filter((l) => l.includes("first look at inbound history")).length === 2,
      "the first look at both users' histories",
    );
    const url = `${rig.url("webhooks")}/faxgate/events`;
    const push = (body: unknown) => postEvent(url, body);
    const adminId = (await api.get("/v1/me", TEST_KEYS.admin)).json.userId as string;
    const info = async (id: string) => (await api!.get(`/v1/fax/${id}/info`, TEST_KEYS.admin)).json;

    // a push naming the admin (the webhook's owner, say), not the fax's user: frontdesk's key
    // fetches its info, which names bob
    const named = await arrive(api, { number: BOB_LINE });
    expect(await push({ ...(await info(named)), userId: adminId })).toBe(200);
    expect(await kept(rig, named)).toMatchObject({ user: "bob", groups: ["bobs-desk"], notified: ["bob"] });
    expect((await kept(rig, named)).stored).toMatch(/^received for bob \(webhook\)/);

    // a push naming no user (fax-api.md's record has no userId): one look at every history, frontdesk's first
    const unnamed = await arrive(api, { number: BOB_LINE });
    const { userId: _, ...bare } = await info(unnamed);
    expect(await push(bare)).toBe(200);
    expect(await kept(rig, unnamed)).toMatchObject({ user: "bob", groups: ["bobs-desk"], notified: ["bob"] });

    // the service's own pushes: bob's fax, and alice's (no configured user: frontdesk's key finds it)
    const made = await api.call("POST", "/webhooks", TEST_KEYS.admin, {
      name: "faxgate",
      url,
      auth: `faxgate:${PASSWORD}`,
      events: { "fax.v1.inbound.complete": true },
    });
    expect(made.status, made.text).toBe(200);
    const pushedBob = await arrive(api, { number: BOB_LINE });
    const pushedAlice = await arrive(api, { email: "alice@example.com" });
    const bob = await kept(rig, pushedBob);
    expect(bob).toMatchObject({ user: "bob", groups: ["bobs-desk"], notified: ["bob"] });
    expect(bob.stored).toMatch(/^received for bob \(webhook\)/);
    // alice's push names a user we do not know: the look at every history finds it with frontdesk's key
    expect(await kept(rig, pushedAlice)).toMatchObject({
      user: "frontdesk",
      groups: ["front"],
      notified: ["frontdesk"],
    });
  });
});

describe("the service's info names everyone who can see the fax (emulator infoUsers: viewers)", () => {
  it("the one whose number was dialled, else the one not an admin; frontdesk listed first", async () => {
    let toBob = "";
    let bobElsewhere = "";
    let toAlice = "";
    rig = await startGateway({
      name: "attrib-viewers",
      emulator: { seed: SEED, infoUsers: "viewers" },
      config: async (at) => {
        const a = apiFor(at.emu);
        try {
          // each info names [admin, owner]: both configured for bob's faxes
          toBob = await arrive(a, { number: BOB_LINE });
          // bob's, dialled on a number no user's own record holds: the role decides
          bobElsewhere = await arrive(a, { email: BOB.email, number: "+15550199999" });
          toAlice = await arrive(a, { email: "alice@example.com" });
        } finally {
          await a.close();
        }
        return config([FRONT, BOB], "poll")(at);
      },
    });
    expect(await kept(rig, toBob)).toMatchObject({ user: "bob", groups: ["bobs-desk"], notified: ["bob"] });
    expect(await kept(rig, bobElsewhere)).toMatchObject({ user: "bob", groups: ["bobs-desk"] });
    // alice is not configured: of those named, frontdesk alone is
    expect(await kept(rig, toAlice)).toMatchObject({ user: "frontdesk", groups: ["front"] });
    // told apart by number or role: no config-order warning
    expect(rig.logs.filter((l) => l.includes("several configured users alike"))).toEqual([]);
  });
});

describe("the rule (attributeReceived), case by case", () => {
  const ids: Record<string, string> = { frontdesk: "u-admin", bob: "u-bob", bob2: "u-bob", carol: "u-carol" };
  const opts = (users: Array<{ name: string; email?: string }>, fails: Record<string, FaxgateError> = {}) => ({
    users: () => users,
    me: async (u: string) => {
      if (fails[u]) throw fails[u];
      return { userId: ids[u]! };
    },
  });
  const named = (...who: Array<{ userId?: string; email?: string }>) => ({
    users: who.map((w) => ({ userId: w.userId ?? "", firstName: "", lastName: null, email: w.email ?? "" })),
  });

  it("names one user: theirs; several, or two users of one identity: the first in config order", async () => {
    const users = [{ name: "frontdesk" }, { name: "bob" }, { name: "bob2" }, { name: "carol" }];
    // bob and bob2 share one service identity: nothing but config order tells them apart
    expect(await attributeReceived(named({ userId: "u-bob" }), "frontdesk", opts(users))).toEqual({
      user: "bob",
      by: "service user",
      tiedWith: ["bob2"],
    });
    const both = named({ userId: "u-carol" }, { userId: "u-bob" });
    expect((await attributeReceived(both, "frontdesk", opts(users))).user).toBe("bob");
    expect((await attributeReceived(both, "frontdesk", opts([...users].reverse()))).user).toBe("carol");
  });

  it("several named: the one whose own record holds the number dialled, then a non-admin, then config order", async () => {
    const selves: Record<string, ServiceSelf> = {
      frontdesk: { userId: "u-admin", userRole: "Account Admin", phone: "+1 555 010 0001" },
      bob: { userId: "u-bob", userRole: "user", phone: "", faxNumbers: [{ id: "n1", number: "+1 (555) 010-0444" }] },
      carol: { userId: "u-carol", userRole: "user", phone: "15550100555", faxNumbers: ["+15550100666"] },
      dave: { userId: "u-dave", userRole: "user", phone: "" },
    };
    const users = [{ name: "frontdesk" }, { name: "carol" }, { name: "bob" }, { name: "dave" }];
    const o = { users: () => users, me: async (u: string) => selves[u]! };
    const all = named({ userId: "u-admin" }, { userId: "u-bob" }, { userId: "u-carol" }, { userId: "u-dave" });
    // by number: faxNumbers as objects or strings, phone; digits only
    expect(await attributeReceived({ ...all, faxNumber: "+15550100444" }, "frontdesk", o)).toEqual({
      user: "bob",
      by: "service user",
    });
    expect((await attributeReceived({ ...all, faxNumber: "15550100666" }, "frontdesk", o)).user).toBe("carol");
    expect((await attributeReceived({ ...all, faxNumber: "+15550100555" }, "frontdesk", o)).user).toBe("carol");
    // the admin's own number: theirs, though an admin
    expect((await attributeReceived({ ...all, faxNumber: "+15550100001" }, "bob", o)).user).toBe("frontdesk");
    // no one's number: not the admin listed first; config order among the rest, said
    expect(await attributeReceived({ ...all, faxNumber: "+15550199999" }, "frontdesk", o)).toEqual({
      user: "carol",
      by: "service user",
      tiedWith: ["bob", "dave"],
    });
    const adminAndBob = named({ userId: "u-admin" }, { userId: "u-bob" });
    expect(await attributeReceived(adminAndBob, "frontdesk", o)).toEqual({ user: "bob", by: "service user" });
  });

  it("by email when no user id matches; else, or with no users named, the key's user", async () => {
    const users = [
      { name: "frontdesk", email: "desk@example.com" },
      { name: "dora", email: "Dora@Example.com" },
    ];
    expect(
      await attributeReceived(named({ userId: "u-dora", email: "dora@example.com" }), "frontdesk", opts(users)),
    ).toEqual({ user: "dora", by: "email" });
    expect(await attributeReceived(named({ userId: "u-zed", email: "zed@example.com" }), "dora", opts(users))).toEqual({
      user: "dora",
      by: "key",
      named: "unknown users",
    });
    const nobody = { user: "dora", by: "key", named: "nobody" };
    expect(await attributeReceived({}, "dora", opts(users))).toEqual(nobody);
    expect(await attributeReceived({ users: [] }, "dora", opts(users))).toEqual(nobody);
  });

  it("a user's identity unreadable for now: not guessed (thrown); a key refused for good: passed over", async () => {
    const users = [{ name: "frontdesk" }, { name: "bob" }];
    const down = new FaxgateError("API_NETWORK", "the fax service could not be reached");
    await expect(
      attributeReceived(named({ userId: "u-bob" }), "frontdesk", opts(users, { frontdesk: down })),
    ).rejects.toBe(down);
    await expect(attributeReceived(named({ userId: "u-zed" }), "frontdesk", opts(users, { bob: down }))).rejects.toBe(
      down,
    );
    const revoked = new FaxgateError("API_AUTH", "the API key was missing, unknown or expired (401)");
    expect(
      (await attributeReceived(named({ userId: "u-bob" }), "frontdesk", opts(users, { frontdesk: revoked }))).user,
    ).toBe("bob");
  });
});

describe("a fax kept but not yet routed (a crash between the two)", () => {
  let t: TempStore | null = null;
  afterEach(() => {
    t?.cleanup();
    t = null;
  });

  it("is routed as its kept user's when another key sees it next, with no call to the service", async () => {
    t = tempStore();
    const cfg = validateConfig({
      api: { baseUrl: "sandbox" },
      users: [FRONT, BOB],
      inbound: {
        groups: { "bobs-desk": { members: ["bob"] }, front: { members: ["frontdesk"] } },
        routes: [{ name: "bob's faxes", match: { user: "bob" }, deliver: [{ inbox: "bobs-desk" }] }],
        default: [{ inbox: "front" }],
      },
    });
    const noService = () => {
      throw new Error("no service calls for a fax already kept");
    };
    const intake = testIntake({
      store: t.store,
      clientFor: noService,
      inbound: () => cfg.inbound,
      users: () => cfg.users,
      me: noService,
      dataDir: t.dir,
    });
    const { fax } = await t.store.keepReceived(
      receivedInput({
        messageId: "kept-1",
        user: "bob",
        dialled: BOB_LINE,
        groups: ["bobs-desk"],
        detail: "received for bob (poll)",
      }),
    );
    const seen = { messageId: "kept-1", direction: "inbound", status: "success", faxNumber: BOB_LINE };
    expect(await intake.receive("frontdesk", seen, "poll")).toBe(true);
    const routed = (await t.store.listReceivedEvents(fax.id)).filter((e) => e.action === "routed");
    expect(routed.map((e) => e.detail)).toEqual(["rule bob's faxes: group bobs-desk"]);
    expect((await t.store.getReceived(fax.id))!.user).toBe("bob");
  });

  it("whose user a reload removed meanwhile: the timeline says nobody was mailed", async () => {
    t = tempStore();
    const users = validateConfig({ api: { baseUrl: "sandbox" }, users: [FRONT] }).users;
    // the schema's default route: the receiving user's mail
    const intake = testIntake({
      store: t.store,
      clientFor: () => {
        throw new Error("no service calls for a fax already kept");
      },
      users: () => users,
      me: async () => ({ userId: "u-admin" }),
      dataDir: t.dir,
    });
    const { fax } = await t.store.keepReceived(
      receivedInput({ messageId: "kept-2", user: "bob", dialled: BOB_LINE, detail: "received for bob (poll)" }),
    );
    const seen = { messageId: "kept-2", direction: "inbound", status: "success", faxNumber: BOB_LINE };
    expect(await intake.receive("frontdesk", seen, "poll")).toBe(true);
    const routed = (await t.store.listReceivedEvents(fax.id)).filter((e) => e.action === "routed");
    expect(routed.map((e) => e.detail)).toEqual([
      "rule default: the receiving user's mail: bob is not a configured user: nobody mailed",
    ]);
    expect(await t.store.listNotifications({ kind: "inbound" })).toEqual([]);
  });
});

describe("what the intake says of whose a new fax is (log lines, once per fax)", () => {
  let t: TempStore | null = null;
  afterEach(() => {
    t?.cleanup();
    t = null;
  });
  const lines: string[] = [];
  const logged = () => lines.map((l) => JSON.parse(l) as { level: number; msg: string; messageId?: string });
  const withLog = (p: Parameters<typeof testIntake>[0]) => {
    lines.length = 0;
    return testIntake({
      ...p,
      logger: createLogger({ level: "debug", destination: { write: (l: string) => void lines.push(l) } }),
    });
  };
  // status failed: no document to download, the attribution and its log lines alone
  const record = (messageId: string, users?: Array<{ userId: string; email: string }>) => ({
    messageId,
    direction: "inbound",
    status: "failed",
    faxNumber: BOB_LINE,
    ...(users ? { users: users.map((u) => ({ ...u, firstName: "", lastName: null })) } : {}),
  });
  const noService = () => {
    throw new Error("no service calls: the record names its users");
  };
  const configured = (u: User) => ({ ...u, aliases: [] });

  it("the key's user: said at info when none is named, at warn when only strangers are", async () => {
    t = tempStore();
    const intake = withLog({
      store: t.store,
      clientFor: noService,
      users: () => [FRONT, BOB].map(configured),
      me: async (u) => ({ userId: `u-${u}` }),
      dataDir: t.dir,
    });
    await intake.receive(
      "frontdesk",
      record("strangers-1", [{ userId: "u-zed", email: "zed@example.com" }]),
      "webhook",
    );
    expect(logged().filter((l) => l.msg.includes("only users not configured"))).toMatchObject([
      { level: 40, messageId: "strangers-1" },
    ]);
    await intake.receive("frontdesk", record("nobody-1", []), "webhook");
    expect(logged().filter((l) => l.msg.includes("names no user"))).toMatchObject([
      { level: 30, messageId: "nobody-1" },
    ]);
    expect((await t.store.listReceived({ messageId: "nobody-1" }))[0]!.user).toBe("frontdesk");
  });

  it("several configured users alike: config order, warned once, no number in the line", async () => {
    t = tempStore();
    const intake = withLog({
      store: t.store,
      clientFor: noService,
      // two configured users of one service identity: nothing but config order tells them apart
      users: () => [BOB, { ...BOB, name: "bob2" }].map(configured),
      me: async () => ({ userId: "u-bob", userRole: "user", phone: "" }),
      dataDir: t.dir,
    });
    const r = record("tie-1", [{ userId: "u-bob", email: BOB.email }]);
    await intake.receive("bob", r, "webhook");
    await intake.receive("bob2", r, "webhook");
    const warned = logged().filter((l) => l.msg.includes("several configured users alike"));
    expect(warned).toMatchObject([{ level: 40, messageId: "tie-1", user: "bob", tiedWith: ["bob2"] }]);
    expect(lines.join("\n")).not.toContain(BOB_LINE.slice(2));
  });

  it("a fax the history showed but the service no longer has (404): by its history record, not stuck", async () => {
    rig = await startGateway({
      name: "attrib-gone",
      emulator: { seed: SEED },
      config: config([FRONT, BOB], "webhook"),
    });
    const gw = rig.gw;
    const intake = withLog({
      store: gw.store,
      clientFor: (u) => gw.clientFor(u),
      users: () => [FRONT, BOB].map(configured),
      me: (u) => gw.clientFor(u).me(),
      dataDir: rig.dir,
    });
    expect(await intake.receive("frontdesk", record("0123456789abcdef0123456789abcdef"), "poll")).toBe(true);
    expect((await gw.store.listReceived({ messageId: "0123456789abcdef0123456789abcdef" }))[0]!.user).toBe("frontdesk");
    expect(logged().filter((l) => l.msg.includes("info is gone"))).toHaveLength(1);
  });
});
