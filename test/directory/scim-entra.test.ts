// The SCIM endpoints driven by the request sequence Microsoft documents for Entra ID provisioning
// ("Tutorial: Develop and plan provisioning for a SCIM endpoint"): filter-then-create, get,
// PATCH with "Replace"/"Add" ops of mixed case, `active: "False"` as a string, groups and their
// members, delete. A pushed person's mail is taken, and refused (550 5.7.1) the moment Entra
// sets them inactive.
import { afterEach, describe, expect, it } from "vitest";
import { converse } from "../helpers/raw-smtp.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const TOKEN = "scim-token-for-tests-0123456789abcdef";
const USER = "urn:ietf:params:scim:schemas:core:2.0:User";
const GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group";
const PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

let tg: TestGateway | null = null;
afterEach(async () => {
  await tg?.stop();
  tg = null;
});

async function scim(method: string, path: string, body?: unknown, token = TOKEN) {
  const res = await fetch(`${tg!.url("web")}/scim/v2${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/scim+json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : null };
}

/** The reply to MAIL FROM (banner, EHLO, then MAIL). */
const mailFrom = async (from: string) =>
  (await converse(tg!.smtpPort, from, ["15551230000@fax.localhost"], null))[2] ?? "";

describe("SCIM 2.0 as Entra ID provisions", () => {
  it("filter, create, get, patch, deactivate, group, delete", async () => {
    tg = await startGateway({
      name: "scim-entra",
      config: {
        web: { listen: "127.0.0.1:0" },
        smtp: { listen: ["127.0.0.1:0"] },
        directory: { scim: { token: TOKEN, roles: { "Fax admins": "admin" } } },
      },
    });

    expect((await scim("GET", "/Users", undefined, "wrong-token")).status).toBe(401);

    // 1. is the user there? (Entra filters on the matching attribute first)
    const none = await scim("GET", `/Users?filter=${encodeURIComponent('userName eq "Ann.Lee@contoso.com"')}`);
    expect(none).toMatchObject({ status: 200, body: { totalResults: 0, Resources: [] } });
    expect(await mailFrom("ann.lee@contoso.com")).toMatch(/^550 5\.7\.1 /);

    // 2. create, as Entra sends it
    const created = await scim("POST", "/Users", {
      schemas: [USER, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
      externalId: "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
      userName: "Ann.Lee@contoso.com",
      active: true,
      displayName: "Ann Lee",
      emails: [{ primary: true, type: "work", value: "Ann.Lee@contoso.com" }],
      name: { formatted: "Ann Lee", familyName: "Lee", givenName: "Ann" },
    });
    expect(created.status).toBe(201);
    const id = created.body!.id as string;
    expect(created.body).toMatchObject({ userName: "Ann.Lee@contoso.com", meta: { resourceType: "User" } });
    // the same userName again (any case) is a conflict
    const again = await scim("POST", "/Users", { schemas: [USER], userName: "ann.lee@CONTOSO.com" });
    expect(again).toMatchObject({ status: 409, body: { scimType: "uniqueness", status: "409" } });

    // 3. get, and the filter finds it
    expect((await scim("GET", `/Users/${id}`)).body).toMatchObject({ id, active: true });
    const found = await scim("GET", `/Users?filter=${encodeURIComponent('userName eq "ann.lee@contoso.com"')}`);
    expect(found.body).toMatchObject({ totalResults: 1, Resources: [{ id }] });

    // she is a person now: her mail is taken (trusted network)
    expect(await mailFrom("Ann.Lee@contoso.com")).toMatch(/^250 /);

    // 4. PATCH with Entra's mixed-case ops and paths
    const patched = await scim("PATCH", `/Users/${id}`, {
      schemas: [PATCH],
      Operations: [
        { op: "Replace", path: 'emails[type eq "work"].value', value: "ann@contoso.com" },
        { op: "Add", path: "name.familyName", value: "Lee-Smith" },
        { op: "replace", value: { DisplayName: "Ann Lee-Smith" } },
      ],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      emails: [{ type: "work", value: "ann@contoso.com" }],
      name: { familyName: "Lee-Smith" },
      displayName: "Ann Lee-Smith",
    });
    expect(await mailFrom("ann@contoso.com")).toMatch(/^250 /);

    // 5. a group, its member added by PATCH, then shown without members when asked
    const group = await scim("POST", "/Groups", { schemas: [GROUP], displayName: "Fax admins", members: [] });
    expect(group.status).toBe(201);
    const gid = group.body!.id as string;
    const added = await scim("PATCH", `/Groups/${gid}`, {
      schemas: [PATCH],
      Operations: [{ op: "Add", path: "members", value: [{ value: id }] }],
    });
    expect(added.body!.members).toEqual([{ value: id }]);
    const groups = await scim(
      "GET",
      `/Groups?filter=${encodeURIComponent('displayName eq "Fax admins"')}&excludedAttributes=members`,
    );
    expect(groups.body).toMatchObject({ totalResults: 1 });
    expect(groups.body!.Resources[0].members).toBeUndefined();

    // 6. Entra disables her: "False" as a string; her next mail is refused at once
    const off = await scim("PATCH", `/Users/${id}`, {
      schemas: [PATCH],
      Operations: [{ op: "Replace", path: "active", value: "False" }],
    });
    expect(off).toMatchObject({ status: 200, body: { active: false } });
    expect(await mailFrom("ann@contoso.com")).toMatch(/^550 5\.7\.1 /);

    // an unknown op or path is a SCIM error, not a crash
    const wrong = await scim("PATCH", `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: "Move", path: "x" }] });
    expect(wrong).toMatchObject({ status: 400, body: { status: "400" } });

    // 7. delete: gone
    expect((await scim("DELETE", `/Users/${id}`)).status).toBe(204);
    expect((await scim("GET", `/Users/${id}`)).status).toBe(404);
    expect((await scim("DELETE", `/Groups/${gid}`)).status).toBe(204);
  }, 120_000);
});
