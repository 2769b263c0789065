// History: every filter, newest first, offset as pages (default) or records, and both variants' layouts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, TEST_TAGS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, manualClock, type Api } from "./api.js";

const DAY = 86_400_000;
const clock = manualClock(Date.parse("2026-03-02T12:00:00.000Z"));
let emu: TestEmulator;
let api: Api;
const ids: Record<string, string> = {};

beforeAll(async () => {
  emu = await startTestEmulator({ clock, delayMs: 1000 });
  api = apiFor(emu);
  const send = async (
    name: string,
    faxNumber: string,
    fields: Record<string, string> = {},
    key: string = TEST_KEYS.alice,
  ) => {
    const r = await api.call("POST", "/v1/faxes", key, form({ faxNumber, coverPage: "true", ...fields }));
    expect(r.status, r.text).toBe(200);
    ids[name] = r.json.messageId;
    clock.advance(60_000);
  };
  await send("day1busy", "+15550100000", { subject: "Lab results", tags: TEST_TAGS.urgent });
  await send("day1ok", "+15550104321", { recipientName: "Dr. Quinn", "cf[patient]": "P-7781" });
  clock.advance(DAY);
  await send("day2ok", "+15550104322", {
    cf: JSON.stringify({ invoice: "INV-2024-9" }),
    tags: `${TEST_TAGS.billing},${TEST_TAGS.urgent}`,
  });
  await send("bob", "+15550104323", {}, TEST_KEYS.bob);
  clock.advance(DAY);
  await send("day3pending", "+15550104324"); // created 2026-03-04T12:04:00Z
  // 0.4 s later: day3pending is still processing (the first half of delay 1000 ms); the inbound fax is newest
  clock.set(Date.parse("2026-03-04T12:04:00.400Z"));
  const inbound = await api.call(
    "POST",
    "/_emulator/inbound",
    TEST_KEYS.admin,
    form({ email: "alice@example.com", callerId: "+15557654321", csid: "ACME LAB" }, [["in.txt", "inbound fax"]]),
  );
  expect(inbound.status).toBe(200);
  ids.inbound = inbound.json.messageId;
  await api.call("PATCH", `/v1/fax/${ids.day1ok}`, TEST_KEYS.aliceBase, { isArchived: true });
});
afterAll(async () => {
  await api.close();
  await emu.stop();
});

const history = async (qs: string, key: string = TEST_KEYS.alice) => {
  const r = await api.get(`/v1/fax/history${qs ? `?${qs}` : ""}`, key);
  expect(r.status, r.text).toBe(200);
  return r.json as {
    count: number;
    rows: Array<{ messageId: string; tags?: Array<{ name: string }>; contacts?: unknown }>;
    limit: number;
    offset: number;
  };
};
const names = (rows: Array<{ messageId: string }>) =>
  rows.map((r) => Object.entries(ids).find(([, id]) => id === r.messageId)?.[0]);

describe("history filters", () => {
  it("lists only the caller user's faxes, newest first", async () => {
    const h = await history("");
    expect(names(h.rows)).toEqual(["inbound", "day3pending", "day2ok", "day1ok", "day1busy"]);
    expect(h.count).toBe(5);
  });

  it("direction", async () => {
    expect(names((await history("direction=inbound")).rows)).toEqual(["inbound"]);
    expect((await history("direction=outbound")).count).toBe(4);
    expect((await api.get("/v1/fax/history?direction=sideways", TEST_KEYS.alice)).status).toBe(400);
  });

  it("status, computed from the clock", async () => {
    expect(names((await history("status=failed")).rows)).toEqual(["day1busy"]);
    expect(names((await history("status=processing")).rows)).toEqual(["day3pending"]);
    expect(names((await history("status=success")).rows)).toEqual(["inbound", "day2ok", "day1ok"]);
    expect((await history("status=all")).count).toBe(5);
  });

  it("fromDate and toDate on createdAt, whole days", async () => {
    expect(names((await history("fromDate=2026-03-03")).rows)).toEqual(["inbound", "day3pending", "day2ok"]);
    expect(names((await history("toDate=2026-03-02")).rows)).toEqual(["day1ok", "day1busy"]);
    expect(names((await history("fromDate=2026-03-03&toDate=2026-03-03")).rows)).toEqual(["day2ok"]);
    expect((await api.get("/v1/fax/history?fromDate=yesterday", TEST_KEYS.alice)).status).toBe(400);
  });

  it("free-text query over number, subject, recipient, custom fields, CSID, caller id, message id", async () => {
    expect(names((await history("query=Lab%20res")).rows)).toEqual(["day1busy"]);
    expect(names((await history("query=Quinn")).rows)).toEqual(["day1ok"]);
    expect(names((await history("query=P-7781")).rows)).toEqual(["day1ok"]);
    expect(names((await history("query=INV-2024")).rows)).toEqual(["day2ok"]);
    expect(names((await history("query=4324")).rows)).toEqual(["day3pending"]);
    expect(names((await history("query=ACME%20LAB")).rows)).toEqual(["inbound"]);
    expect(names((await history("query=7654321")).rows)).toEqual(["inbound"]);
    expect(names((await history(`query=${ids.day2ok.slice(0, 13)}`)).rows)).toEqual(["day2ok"]);
    expect((await history("query=%25")).count).toBe(0);
  });

  it("tags, isArchived, and include tags/contacts (either spelling)", async () => {
    expect(names((await history(`tags=${TEST_TAGS.billing}`)).rows)).toEqual(["day2ok"]);
    expect(names((await history(`tags=${TEST_TAGS.urgent}`)).rows)).toEqual(["day2ok", "day1busy"]);
    expect(names((await history("isArchived=true")).rows)).toEqual(["day1ok"]);
    expect((await history("isArchived=false")).count).toBe(4);
    const plain = await history("limit=1&offset=2");
    expect(plain.rows[0].tags).toBeUndefined();
    for (const p of ["include=tags,contacts", "includes=tags&includes=contacts", "includes[]=tags"]) {
      const withTags = await history(`${p}&limit=1&offset=2`);
      expect(withTags.rows[0].tags!.map((t) => t.name).sort()).toEqual(["Billing", "Urgent"]);
      expect(withTags.rows[0].tags![0]).toMatchObject({
        uuid: expect.any(String),
        createdBy: expect.any(String),
        color: expect.any(String),
        isPublic: 1,
      });
    }
    expect(Array.isArray((await history("include=contacts&limit=1")).rows[0].contacts)).toBe(true);
  });

  it("userId and accountId: admins see the account, filtered by user on request", async () => {
    const all = await history("", TEST_KEYS.admin);
    expect(all.count).toBe(6);
    const bobId = (await api.get("/v1/me", TEST_KEYS.bob)).json.userId;
    expect(names((await history(`userId=${bobId}`, TEST_KEYS.admin)).rows)).toEqual(["bob"]);
    expect((await history(`accountId=${emu.accountId}`, TEST_KEYS.admin)).count).toBe(6);
    expect((await api.get("/v1/fax/history?accountId=other", TEST_KEYS.admin)).status).toBe(403);
  });
});

describe("paging", () => {
  it("by default offset counts pages of limit records, order stays newest first", async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 3; offset += 1) {
      const page = await history(`limit=2&offset=${offset}`);
      expect(page.count).toBe(5);
      expect(page.limit).toBe(2);
      expect(page.offset).toBe(offset);
      seen.push(...(names(page.rows) as string[]));
    }
    expect(seen).toEqual(["inbound", "day3pending", "day2ok", "day1ok", "day1busy"]);
    expect((await history("limit=2&offset=3")).rows).toEqual([]);
  });

  it("with offsetMode records, offset counts records", async () => {
    const set = await api.call("PUT", "/_emulator/behaviour", TEST_KEYS.admin, { offsetMode: "records" });
    expect(set.json.offsetMode).toBe("records");
    try {
      const seen: string[] = [];
      for (let offset = 0; offset < 5; offset += 2)
        seen.push(...(names((await history(`limit=2&offset=${offset}`)).rows) as string[]));
      expect(seen).toEqual(["inbound", "day3pending", "day2ok", "day1ok", "day1busy"]);
      expect((await history("offset=5")).rows).toEqual([]);
    } finally {
      await api.call("PUT", "/_emulator/behaviour", TEST_KEYS.admin, { offsetMode: "pages" });
    }
  });
});

describe("variant B layout", () => {
  it("count is a string and paging sits under query; keys carry access", async () => {
    const b = await startTestEmulator({ variant: "b" });
    const bapi = apiFor(b);
    try {
      await bapi.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550101010", coverPage: "true", cf: '{"ref":"B"}' }),
      );
      const h = await bapi.get("/v1/fax/history?limit=10&offset=0", TEST_KEYS.alice);
      expect(h.json).toEqual({
        count: "1",
        rows: [expect.objectContaining({ cf: { ref: "B" } })],
        query: { limit: 10, offset: 0 },
      });
      const keys = await bapi.get("/api-keys", TEST_KEYS.admin);
      expect(keys.json[0].access).toBe("admin");
      expect(keys.json[0].accessLevel).toBeUndefined();
      expect(keys.json[0].user.userId).toBeUndefined();
      const me = (await bapi.get("/v1/me", TEST_KEYS.alice)).json;
      expect(me.email).toBe("alice@example.com");
      expect(me.companyName).toBeUndefined();
      const a = await history("limit=1");
      expect(typeof a.count).toBe("number");
      expect(a).toHaveProperty("limit", 1);
    } finally {
      await bapi.close();
      await b.stop();
    }
  });
});
