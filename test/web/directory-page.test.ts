// The operator's directory page over HTTP against a whole gateway with a SCIM directory: the
// group mapping as configured, the people pushed (role from their group, whether they can fax, a
// users: entry that wins), who has left after `active:false`, and the page itself with its nav
// link. Anyone but an operator is refused 403.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DirectoryPageView } from "../../src/web/index.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { PASSWORDS, consoleGateway, signIn } from "./rig.js";

const TOKEN = "scim-token-for-tests-0123456789abcdef";
const USER = "urn:ietf:params:scim:schemas:core:2.0:User";
const GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group";
const PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

let rig: TestGateway;
let ops: { cookie: string; csrf: string };
let alice: { cookie: string; csrf: string };

async function scim(method: string, p: string, body?: unknown) {
  const res = await fetch(`${rig.url("web")}/scim/v2${p}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/scim+json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as { id: string }) : null };
}

const page = async (s: { cookie: string }) => {
  const r = await fetch(`${rig.url("web")}/api/admin/directory`, { headers: { cookie: s.cookie } });
  return { status: r.status, body: (await r.json()) as DirectoryPageView };
};

beforeAll(async () => {
  rig = await startGateway(
    consoleGateway({
      config: {
        inbound: { groups: { billing: { members: ["bob"] } } },
        directory: { scim: { token: TOKEN, roles: { "Fax admins": "admin" }, inbox: { Billing: "billing" } } },
      },
    }),
  );
  ops = await signIn(rig.url("web"), "ops", PASSWORDS.ops);
  alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
});
afterAll(async () => {
  await rig?.stop();
});

describe("the directory page", () => {
  it("shows the mapping, the people pushed, and who has left; operators only", async () => {
    const carol = await scim("POST", "/Users", {
      schemas: [USER],
      userName: "carol",
      active: true,
      emails: [{ primary: true, value: "carol@example.com" }],
    });
    expect(carol.status).toBe(201);
    // a directory alice: the users: entry wins
    await scim("POST", "/Users", {
      schemas: [USER],
      userName: "alice",
      active: true,
      emails: [{ primary: true, value: "alice.dir@example.com" }],
    });
    await scim("POST", "/Groups", {
      schemas: [GROUP],
      displayName: "Fax admins",
      members: [{ value: carol.body!.id }],
    });
    await scim("POST", "/Groups", { schemas: [GROUP], displayName: "Billing", members: [{ value: carol.body!.id }] });

    expect((await page(alice)).status).toBe(403);
    const seen = await page(ops);
    expect(seen.status).toBe(200);
    expect(seen.body.configured).toBe(true);
    expect(seen.body.lastSync).toBeNull();
    expect(seen.body.mapping).toEqual(
      expect.arrayContaining([
        { source: "scim", group: "Fax admins", role: "admin", inbox: [] },
        { source: "scim", group: "Billing", role: null, inbox: ["billing"] },
      ]),
    );
    const byName = new Map(seen.body.people.map((p) => [p.name, p]));
    expect(byName.get("carol")).toMatchObject({
      email: "carol@example.com",
      source: "scim",
      role: "admin",
      inbox: ["billing"],
      mapped: false,
      keyed: false,
      shadowedBy: null,
    });
    expect(byName.get("alice")).toMatchObject({ shadowedBy: "alice" });
    expect(seen.body.leavers).toEqual([]);

    await scim("PATCH", `/Users/${carol.body!.id}`, {
      schemas: [PATCH],
      Operations: [{ op: "replace", path: "active", value: false }],
    });
    const after = await page(ops);
    expect(after.body.people.map((p) => p.name)).not.toContain("carol");
    expect(after.body.leavers).toEqual([{ name: "carol", at: expect.any(String) }]);

    // the page, and its link in the console's navigation (operators see it)
    const html = await (await fetch(`${rig.url("web")}/directory.html`)).text();
    expect(html).toContain("<h1>Directory</h1>");
    const app = await (await fetch(`${rig.url("web")}/app.js`)).text();
    expect(app).toContain('session.admin ? link("/directory.html", "Directory")');
  }, 60_000);
});
