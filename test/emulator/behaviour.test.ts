// The emulator as an independent model of the real service: it imports none of the product's
// modules, and the switches for what the public evidence leaves unsettled (offset, cf, recipient
// error shape, history rate limit) work at start and at run time.
import { readdir, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, TEST_KEYS, type TestEmulator } from "../helpers/emulator.js";
import { apiFor, form, manualClock, type Api } from "./api.js";
import { tempFolder } from "../tmp-dir.js";

const EMULATOR_DIR = path.resolve("src/emulator");
/**
 * Generic plumbing the emulator may share; everything else under src/ is the product. log/ is
 * reached through its entry file (log/index.ts), which only hands on logger.ts's names.
 */
const ALLOWED = new Set(
  ["clock.ts", "log/index.ts", "log/logger.ts", "config/host-port.ts", "errors.ts"].map((f) => path.resolve("src", f)),
);

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(p)));
    else if (e.name.endsWith(".ts")) out.push(p);
  }
  return out;
}

describe("independence", () => {
  it("no file under src/emulator imports a product module", async () => {
    const offenders: string[] = [];
    for (const file of await sources(EMULATOR_DIR)) {
      const text = await readFile(file, "utf8");
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
        const target = path.resolve(path.dirname(file), m[1]).replace(/\.js$/, ".ts");
        if (!target.startsWith(EMULATOR_DIR + path.sep) && !ALLOWED.has(target))
          offenders.push(`${path.relative(".", file)} -> ${m[1]}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

describe("behaviour switches", () => {
  let emu: TestEmulator;
  let api: Api;
  const clock = manualClock();
  beforeAll(async () => {
    emu = await startTestEmulator({ clock, delayMs: 100 });
    api = apiFor(emu);
  });
  afterAll(async () => {
    await api.close();
    await emu.stop();
  });
  const put = (body: Record<string, unknown>) => api.call("PUT", "/_emulator/behaviour", TEST_KEYS.admin, body);

  it("PUT /_emulator/behaviour answers the whole behaviour; admin only; bad values refused by name", async () => {
    const r = await put({ cfMode: "empty" });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      offsetMode: "pages",
      cfMode: "empty",
      recipientErrorShape: "input",
      historyPerMinute: 0,
      historyRetryAfter: false,
      ratePerSecond: 0,
      webhookRetryScale: 1,
      infoUsers: "owner",
    });
    expect((await api.get("/_emulator/behaviour", TEST_KEYS.admin)).json.cfMode).toBe("empty");
    expect((await api.call("PUT", "/_emulator/behaviour", TEST_KEYS.alice, { cfMode: "kept" })).status).toBe(403);
    for (const [body, word] of [
      [{ cfMode: "lost" }, "cfMode"],
      [{ historyPerMinute: -1 }, "historyPerMinute"],
      [{ ratePerSecond: 1.5 }, "ratePerSecond"],
      [{ webhookRetryScale: 0 }, "webhookRetryScale"],
      [{ infoUsers: "everyone" }, "infoUsers"],
      [{ colour: "red" }, "colour"],
    ] as const) {
      const bad = await put(body);
      expect(bad.status).toBe(400);
      expect(bad.json.error.name).toBe("InvalidInputError");
      expect(bad.json.error.message).toContain(word);
    }
    // a refused change changes nothing
    expect((await api.get("/_emulator/behaviour", TEST_KEYS.admin)).json.cfMode).toBe("empty");
    await put({ cfMode: "kept" });
  });

  it("cfMode: kept echoes custom fields, empty answers {}, dropped leaves them out (and out of search)", async () => {
    const sent = (
      await api.call(
        "POST",
        "/v1/faxes",
        TEST_KEYS.alice,
        form({ faxNumber: "+15550104444", coverPage: "true", cf: '{"job":"J-991"}' }),
      )
    ).json;
    const info = async () => (await api.get(`/v1/fax/${sent.messageId}/info`, TEST_KEYS.alice)).json;
    expect(sent.cf).toEqual({ job: "J-991" });
    await put({ cfMode: "empty" });
    expect((await info()).cf).toEqual({});
    await put({ cfMode: "dropped" });
    expect("cf" in (await info())).toBe(false);
    expect((await api.get("/v1/fax/history?query=J-991", TEST_KEYS.alice)).json.count).toBe(0);
    await put({ cfMode: "kept" });
    expect((await info()).cf).toEqual({ job: "J-991" });
    expect((await api.get("/v1/fax/history?query=J-991", TEST_KEYS.alice)).json.count).toBe(1);
  });

  it("recipientErrorShape: input by default, recipientFax on request", async () => {
    const many = () =>
      api.call(
        "POST",
        "/v1/faxes/multiple",
        TEST_KEYS.alice,
        form({ recipientFax: "+15550105555,oops", coverPage: "true" }),
      );
    expect((await many()).json.errors).toEqual([
      { input: { faxNumber: "oops" }, error: expect.stringMatching(/^InvalidInputError: /) },
    ]);
    await put({ recipientErrorShape: "recipientFax" });
    try {
      expect((await many()).json.errors).toEqual([
        { recipientFax: "oops", error: expect.stringMatching(/^InvalidInputError: /) },
      ]);
    } finally {
      await put({ recipientErrorShape: "input" });
    }
  });

  it("history is limited per minute: 429 until the window resets, Retry-After only when switched on", async () => {
    await put({ historyPerMinute: 3 });
    try {
      for (let i = 0; i < 3; i++) expect((await api.get("/v1/fax/history", TEST_KEYS.alice)).status).toBe(200);
      const refused = await api.get("/v1/fax/history", TEST_KEYS.alice);
      expect(refused.status).toBe(429);
      expect(refused.json.error.name).toBe("RateLimitError");
      expect(refused.headers["retry-after"]).toBeUndefined();
      // the limit is per account: another user of the same account is refused too
      expect((await api.get("/v1/fax/history", TEST_KEYS.bob)).status).toBe(429);
      // other endpoints are not limited
      expect((await api.get("/v1/me", TEST_KEYS.alice)).status).toBe(200);
      await put({ historyRetryAfter: true });
      clock.advance(20_000);
      const told = await api.get("/v1/fax/history", TEST_KEYS.alice);
      expect(told.status).toBe(429);
      expect(told.headers["retry-after"]).toBe("40");
      clock.advance(40_000);
      expect((await api.get("/v1/fax/history", TEST_KEYS.alice)).status).toBe(200);
    } finally {
      await put({ historyPerMinute: 0, historyRetryAfter: false });
    }
    for (let i = 0; i < 10; i++) expect((await api.get("/v1/fax/history", TEST_KEYS.alice)).status).toBe(200);
  });
});

describe("the account's rate", () => {
  let emu: TestEmulator;
  let api: Api;
  const clock = manualClock();
  beforeAll(async () => {
    emu = await startTestEmulator({ clock, delayMs: 100 });
    api = apiFor(emu);
  });
  afterAll(async () => {
    await api.close();
    await emu.stop();
  });

  it("ratePerSecond: the call over it within a second is 429 with Retry-After, for every key of the account", async () => {
    await api.call("PUT", "/_emulator/behaviour", TEST_KEYS.admin, { ratePerSecond: 3 });
    await api.call("DELETE", "/_emulator/limits", TEST_KEYS.admin);
    // alice and bob are users of one account: their calls count together
    for (const key of [TEST_KEYS.alice, TEST_KEYS.bob, TEST_KEYS.alice]) {
      expect((await api.get("/v1/me", key)).status).toBe(200);
      clock.advance(100);
    }
    const over = await api.call("GET", "/v1/me", TEST_KEYS.bob);
    expect(over.status).toBe(429);
    expect(over.json.error.name).toBe("RateLimitError");
    expect(over.headers["retry-after"]).toBe("1");
    // a second after the first call, there is room again; /ping is never counted
    expect((await api.call("GET", "/ping", TEST_KEYS.alice)).status).toBe(200);
    clock.advance(701);
    expect((await api.get("/v1/me", TEST_KEYS.alice)).status).toBe(200);
    const load = Object.values((await api.get("/_emulator/limits", TEST_KEYS.admin)).json) as Array<
      Record<string, number>
    >;
    expect(load).toEqual([{ calls: 5, peakPerSecond: 4, refusedRate: 1, refusedHistory: 0 }]);
    await api.call("PUT", "/_emulator/behaviour", TEST_KEYS.admin, { ratePerSecond: 0 });
  });
});

describe("start options", () => {
  it("switches given at start are in force, and the data folder is private", async () => {
    // a folder the emulator makes itself (mkdtemp's would be 0700 already)
    const parent = tempFolder("perm");
    const emu = await startTestEmulator({
      dataDir: path.join(parent, "emu-data"),
      offsetMode: "records",
      cfMode: "dropped",
      recipientErrorShape: "recipientFax",
      historyPerMinute: 8,
      historyRetryAfter: true,
      webhookRetryScale: 0.5,
      infoUsers: "viewers",
    });
    try {
      expect(emu.behaviour()).toEqual({
        offsetMode: "records",
        cfMode: "dropped",
        recipientErrorShape: "recipientFax",
        historyPerMinute: 8,
        historyRetryAfter: true,
        ratePerSecond: 0,
        webhookRetryScale: 0.5,
        infoUsers: "viewers",
      });
      expect((await stat(emu.dataDir)).mode & 0o777).toBe(0o700);
      expect((await stat(path.join(emu.dataDir, "faxes"))).mode & 0o777).toBe(0o700);
      for (const f of ["emulator.sqlite", "key.pem"])
        expect((await stat(path.join(emu.dataDir, f))).mode & 0o777, f).toBe(0o600);
      const api = apiFor(emu);
      const sent = (
        await api.call("POST", "/v1/faxes", TEST_KEYS.alice, form({ faxNumber: "+15550104444", coverPage: "true" }))
      ).json;
      await api.close();
      const files = await readdir(path.join(emu.dataDir, "faxes"));
      expect(files).toContain(`${sent.messageId}.pdf`);
      for (const f of files) expect((await stat(path.join(emu.dataDir, "faxes", f))).mode & 0o077, f).toBe(0);
    } finally {
      await emu.stop();
      await rm(parent, { recursive: true, force: true });
    }
  });

  it("a bad switch at start is refused by name", async () => {
    await expect(startTestEmulator({ offsetMode: "lines" as never })).rejects.toThrow(/offsetMode/);
  });
});
