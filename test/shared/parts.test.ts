// The composition root's two rules (src/parts/part.ts, src/parts/live-settings.ts): parts start
// in list order and stop in reverse, a part that fails to stop does not keep the others running;
// a reload replaces the one source of users and tells the parts that keep something built from
// them, in the order they subscribed, before it resolves.
import { rmSync } from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { validateConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/log/logger.js";
import { LiveSettings } from "../../src/parts/live-settings.js";
import { type Part, startParts, stopParts } from "../../src/parts/part.js";
import { tempFolder } from "../tmp-dir.js";

function capture(): { logger: ReturnType<typeof createLogger>; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = createLogger({ destination, format: "json" });
  const lines = () =>
    chunks
      .join("")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines };
}

describe("the list of parts", () => {
  it("starts in order, stops in reverse, and a failed stop is logged while the rest still stop", async () => {
    const seen: string[] = [];
    const part = (name: string, failStop = false): Part => ({
      name,
      start: async () => {
        seen.push(`start ${name}`);
      },
      stop: (left) => {
        expect(left()).toBeGreaterThanOrEqual(1000);
        seen.push(`stop ${name}`);
        if (failStop) throw new Error(`${name} would not close`);
      },
    });
    const parts = [part("store"), part("dispatcher", true), part("smtp")];
    const { logger, lines } = capture();
    await startParts(parts);
    await stopParts(parts, { timeoutMs: 5000, now: Date.now, logger });
    expect(seen).toEqual([
      "start store",
      "start dispatcher",
      "start smtp",
      "stop smtp",
      "stop dispatcher",
      "stop store",
    ]);
    expect(
      lines()
        .filter((l) => l.level === 40)
        .map((l) => l.msg),
    ).toEqual(["shutdown: dispatcher failed"]);
  });

  it("a failed start ends the start: later parts are not started", async () => {
    const seen: string[] = [];
    const parts: Part[] = [
      {
        name: "office",
        start: () => {
          seen.push("office");
        },
      },
      {
        name: "admin",
        start: () => {
          throw new Error("admin.listen: address in use");
        },
      },
      {
        name: "smtp",
        start: () => {
          seen.push("smtp");
        },
      },
    ];
    await expect(startParts(parts)).rejects.toThrow(/address in use/);
    expect(seen).toEqual(["office"]);
  });
});

describe("the live source of users", () => {
  let dir: string | null = null;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = null;
  });

  it("a reload replaces users, destinations and inbound routes, keeps the rest, and tells listeners in order", async () => {
    dir = tempFolder("parts");
    const base = {
      api: { baseUrl: "https://127.0.0.1:9" },
      data: path.join(dir, "data"),
      smtp: { listen: ["127.0.0.1:0"] },
      users: [{ name: "alice", email: "alice@example.com", apiKey: "alice-key" }],
    };
    const { logger, lines } = capture();
    const live = new LiveSettings(validateConfig(base), logger);
    const told: string[] = [];
    live.onUsersChanged((users) => {
      told.push(`first ${users.map((u) => u.name).join(",")}`);
    });
    live.onUsersChanged(async (users) => {
      // the source already answers with the new users while listeners run
      told.push(`second ${live.users().length === users.length}`);
    });
    const next = validateConfig({
      ...base,
      smtp: { listen: ["127.0.0.1:2525"] },
      users: [...base.users, { name: "bob", email: "bob@example.com", apiKey: "bob-key" }],
    });
    await live.reload(next);
    expect(told).toEqual(["first alice,bob", "second true"]);
    expect(live.users().map((u) => u.name)).toEqual(["alice", "bob"]);
    // listeners and other settings stay as started (a reload never moves a listener)
    expect(live.config().smtp?.listen).toEqual(["127.0.0.1:0"]);
    expect(lines().find((l) => l.msg === "RELOADED users")).toMatchObject({ users: 2, why: "SIGHUP" });
  });
});
