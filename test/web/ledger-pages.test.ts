// The operator's ledger and legal-hold pages over HTTP against a whole gateway: a person who is
// not an operator is refused 403 everywhere; holds are added and released through the console
// with their ledger rows (door console, the release's reason); the ledger is searched with the
// export's filters, newest first, paged, and exported as the same rows; a held number is never
// echoed in an answer or the log, in whole or as it was typed.
import { existsSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqlLedger } from "../../src/ledger/index.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { PASSWORDS, consoleGateway, signIn } from "./rig.js";

const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
if (!existsSync(CHROMIUM)) console.warn(`ledger pages in Chromium skipped: no chromium at ${CHROMIUM}`);
const SHOTS =
  process.env.FAXGATE_SCREENSHOTS === "1"
    ? path.resolve(__dirname, "../../docs/images")
    : path.join(os.tmpdir(), "faxgate-console-shots");
const NUMBER = "+1 (555) 010-7788";
const DIGITS = "5550107788";

let rig: TestGateway;
let ops: { cookie: string; csrf: string };
let alice: { cookie: string; csrf: string };
/** every answer's text, to look for the number in */
const answers: string[] = [];

async function call(
  s: { cookie: string; csrf: string },
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; text: string; type: string; json: () => any }> {
  const r = await fetch(`${rig.url("web")}${url}`, {
    method,
    headers: {
      cookie: s.cookie,
      "x-csrf-token": s.csrf,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  answers.push(text);
  return { status: r.status, text, type: r.headers.get("content-type") ?? "", json: () => JSON.parse(text) };
}

beforeAll(async () => {
  rig = await startGateway(consoleGateway());
  ops = await signIn(rig.url("web"), "ops", PASSWORDS.ops);
  alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
});
afterAll(async () => {
  await rig?.stop();
});

describe("legal holds in the console", () => {
  let numberHold: string;

  it("refuses anyone but an operator, 403, on every route", async () => {
    for (const [method, url, body] of [
      ["GET", "/api/admin/ledger"],
      ["GET", `/api/admin/ledger?number=${encodeURIComponent(NUMBER)}`],
      ["GET", "/api/admin/ledger/export?format=csv"],
      ["GET", "/api/admin/holds"],
      ["POST", "/api/admin/holds", { kind: "user", value: "bob", reason: "x" }],
      ["POST", "/api/admin/holds/LH1/release", { reason: "x" }],
    ] as const) {
      const r = await call(alice, method, url, body);
      expect(r.status, `${method} ${url}`).toBe(403);
      expect(r.json().error).toMatch(/operator/);
    }
    expect((await call(ops, "GET", "/api/admin/holds")).json().holds).toEqual([]);
  });

  it("adds holds with a required reason; a held number comes back shortened", async () => {
    const noReason = await call(ops, "POST", "/api/admin/holds", {
      kind: "matter",
      value: "Smith v Jones",
      reason: " ",
    });
    expect(noReason.status).toBe(400);
    expect(noReason.json().error).toMatch(/reason/);
    const badKind = await call(ops, "POST", "/api/admin/holds", { kind: "planet", value: "x", reason: "y" });
    expect(badKind.status).toBe(400);
    expect(badKind.json().error).toMatch(/user, number, job, received, matter/);

    const n = await call(ops, "POST", "/api/admin/holds", { kind: "number", value: NUMBER, reason: "subpoena 17" });
    expect(n.status).toBe(201);
    expect(n.json().hold).toMatchObject({ kind: "number", value: "+155…88", reason: "subpoena 17", heldBy: "ops" });
    numberHold = n.json().hold.id;
    const m = await call(ops, "POST", "/api/admin/holds", {
      kind: "matter",
      value: "Smith v Jones",
      reason: "litigation",
    });
    expect(m.status).toBe(201);
    const list = (await call(ops, "GET", "/api/admin/holds")).json().holds;
    expect(list.map((h: { kind: string; value: string }) => `${h.kind} ${h.value}`)).toEqual([
      "number +155…88",
      "matter Smith v Jones",
    ]);
  });

  it("releases with a required reason, once; the ledger keeps who, why and the door", async () => {
    const noReason = await call(ops, "POST", `/api/admin/holds/${numberHold}/release`, {});
    expect(noReason.status).toBe(400);
    expect(noReason.json().error).toMatch(/reason/);
    const r = await call(ops, "POST", `/api/admin/holds/${numberHold}/release`, { reason: "case settled" });
    expect(r.status).toBe(200);
    expect(r.json().hold).toMatchObject({ id: numberHold, releasedBy: "ops" });
    expect((await call(ops, "POST", `/api/admin/holds/${numberHold}/release`, { reason: "again" })).status).toBe(404);
    expect((await call(ops, "GET", "/api/admin/holds")).json().holds).toHaveLength(1);
    expect((await call(ops, "GET", "/api/admin/holds?all=1")).json().holds).toHaveLength(2);

    const rows = (await call(ops, "GET", "/api/admin/ledger?object=hold:" + numberHold)).json().rows;
    expect(rows.map((x: { action: string }) => x.action)).toEqual(["hold-released", "held"]);
    for (const x of rows) {
      expect(x).toMatchObject({ actor: { kind: "operator", id: "ops" }, door: "console", client: "127.0.0.1" });
      expect(x.numberHash).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(rows[0].detail).toEqual({ on: "number", reason: "case settled" });
  });
});

describe("the ledger page", () => {
  it("finds a number's rows by its hash, as typed or in E.164, and never echoes it", async () => {
    for (const typed of [NUMBER, "+15550107788"]) {
      const r = await call(ops, "GET", `/api/admin/ledger?number=${encodeURIComponent(typed)}`);
      expect(r.status).toBe(200);
      expect(r.json().rows.map((x: { action: string }) => x.action)).toEqual(["hold-released", "held"]);
    }
    const other = await call(ops, "GET", `/api/admin/ledger?number=${encodeURIComponent("+15550100000")}`);
    expect(other.json().rows).toEqual([]);
    // a refused search with a number in it: the refusal names the key, the log does not see the URL
    const bad = await call(ops, "GET", `/api/admin/ledger?number=${encodeURIComponent(NUMBER)}&since=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.json().error).toMatch(/^since:/);
    const badObject = await call(ops, "GET", "/api/admin/ledger?object=fax:1");
    expect(badObject.json().error).toMatch(/^object:/);
    const badAction = await call(ops, "GET", "/api/admin/ledger?action=glanced");
    expect(badAction.json().error).toMatch(/^action:/);

    const everything = [...answers, ...rig.logs].join("\n");
    expect(everything).not.toContain(DIGITS);
    expect(everything).not.toContain("010-7788");
  });

  it("pages newest first and exports the same rows as JSON lines and CSV", async () => {
    // rows the gateway's own ledger appends (a view each), more than one page of them
    const ledger = new SqlLedger(rig.gw.store.sql, null);
    for (let i = 1; i <= 60; i++)
      await ledger.record({
        action: "viewed",
        actor: { kind: "person", id: "bob" },
        object: { kind: "job", id: `J${i}` },
        door: "console",
      });

    const first = (await call(ops, "GET", "/api/admin/ledger?action=viewed&user=bob")).json();
    expect(first.rows).toHaveLength(50);
    expect(first.next).toBe(first.rows.at(-1).seq);
    const second = (await call(ops, "GET", `/api/admin/ledger?action=viewed&user=bob&page=${first.next}`)).json();
    expect(second.rows).toHaveLength(10);
    expect(second.next).toBeNull();
    const seqs = [...first.rows, ...second.rows].map((r: { seq: number }) => r.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
    expect(new Set(seqs).size).toBe(60);
    expect(first.rows[0].object.id).toBe("J60");
    expect((await call(ops, "GET", "/api/admin/ledger?action=viewed&user=alice")).json().rows).toEqual([]);
    expect((await call(ops, "GET", "/api/admin/ledger?page=0")).status).toBe(400);

    const jsonl = await call(ops, "GET", "/api/admin/ledger/export?format=jsonl&action=viewed&user=bob");
    expect(jsonl.status).toBe(200);
    expect(jsonl.type).toMatch(/ndjson/);
    const exported = jsonl.text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(exported).toEqual([...first.rows, ...second.rows].reverse());

    const csv = await call(ops, "GET", "/api/admin/ledger/export?format=csv&action=viewed&user=bob");
    expect(csv.type).toMatch(/text\/csv/);
    const lines = csv.text.split("\r\n").filter(Boolean);
    expect(lines[0]).toBe(
      "seq,at,action,actor_kind,actor_id,object_kind,object_id,door,client,number_hash,detail,prev_hash,hash",
    );
    expect(lines).toHaveLength(61);
    expect(lines[1]!.split(",").slice(0, 7)).toEqual([
      String(seqs.at(-1)),
      exported[0].at,
      "viewed",
      "person",
      "bob",
      "job",
      "J1",
    ]);
    expect((await call(ops, "GET", "/api/admin/ledger/export?format=xml")).status).toBe(400);
  });

  it("is not itself a ledger row: looking at the ledger records nothing", async () => {
    const before = (await call(ops, "GET", "/api/admin/ledger")).json().rows[0].seq;
    await call(ops, "GET", "/api/admin/ledger?action=held");
    await call(ops, "GET", "/api/admin/ledger/export?format=csv");
    expect((await call(ops, "GET", "/api/admin/ledger")).json().rows[0].seq).toBe(before);
  });
});

describe("the pages in Chromium", () => {
  it.skipIf(!existsSync(CHROMIUM))(
    "an operator opens both pages, adds and releases a hold, and finds both rows in the ledger",
    async () => {
      mkdirSync(SHOTS, { recursive: true });
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      try {
        const page = await (await browser.newContext({ viewport: { width: 1200, height: 800 } })).newPage();
        await page.goto(`${rig.url("web")}/login.html`);
        await page.getByLabel("User name").fill("ops");
        await page.getByLabel("Password").fill(PASSWORDS.ops);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("link", { name: "Legal holds" }).click();
        await page.waitForURL(/holds\.html/);
        await page.getByLabel("Hold on", { exact: true }).selectOption("user");
        await page.getByLabel("Value", { exact: true }).fill("bob");
        await page.getByLabel("Reason", { exact: true }).fill("audit 2026-11");
        await page.getByRole("button", { name: "Add hold" }).click();
        const row = page.locator("#holds tbody tr", { hasText: "user bob" });
        await row.waitFor();
        const id = await row.getAttribute("data-id");
        await page.getByLabel(`Reason to release hold ${id}`).fill("audit done");
        await row.getByRole("button", { name: "Release" }).click();
        await row.waitFor({ state: "detached" });
        await page.locator("#status", { hasText: `Hold ${id} released` }).waitFor();

        await page.getByRole("link", { name: "Ledger" }).click();
        await page.waitForURL(/ledger\.html/);
        await page.getByLabel("Object").fill(`hold:${id}`);
        await page.getByRole("button", { name: "Search" }).click();
        await page.locator("#rows tbody tr", { hasText: "hold-released" }).waitFor();
        const actions = await page.locator("#rows tbody tr td:nth-child(3)").allTextContents();
        expect(actions).toEqual(["hold-released", "held"]);
        expect(await page.locator("#export-csv").getAttribute("href")).toContain(`object=hold%3A${id}`);
        await page.getByLabel("Object").fill("");
        await page.getByRole("button", { name: "Search" }).click();
        // more than a page of rows by now: the button for older ones shows
        await page.locator("#more:visible").waitFor();
        await page.screenshot({ path: path.join(SHOTS, "console-ledger.png"), fullPage: true });
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
