// Keys of older releases (numbers with their unit in the name: leaseMs, confirmHours...) are still
// read: renamed before the schema parses, each use named by `faxgate config check` and logged by the
// daemon at start and on reload. A config written the old way is the same config as the new way.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfigText, parseConfigTextDetailed } from "../../src/config/load.js";
import { OLD_KEYS } from "../../src/config/old-keys.js";
import { FaxgateError } from "../../src/errors.js";
import { runCli } from "../helpers/cli.js";
import { startDaemon, type TestDaemon } from "../helpers/gateway.js";
import { tempFolder } from "../tmp-dir.js";

// every old key, each with a value other than its default, so a key read wrongly shows
const OLD_STYLE = `
api: {baseUrl: sandbox, contactCacheSeconds: 45}
dns: {timeoutMs: 1500}
smtp:
  socketTimeoutMs: 90000
  greetingDelayMs: 250
  idleSessionMs: 300000
  senderAuth: {confirmHours: 36}
spool: {root: /tmp/spool, stableMs: 1500, dedupeWindowMinutes: 90, maxWriteMinutes: 45, addressWaitHours: 12}
imap:
  mailboxes:
    - {host: imap.example.com, user: fax, password: pw, trustedAuthservIds: [mx.example.com], pollSeconds: 120}
queue: {maxAgeHours: 72, retrySchedule: [10, 90, 0.5], pollIntervalMs: 2500, leaseMs: 30000,
        reconcileGraceMs: 7000, scheduleAheadHours: 1.5, keyRecheckMs: 600000}
notify: {from: f@example.com, transport: "outbox:/tmp/outbox", preferenceRefreshMs: 120000, inbound: {intervalMs: 30000}}
web: {listen: "127.0.0.1:8025", sessionHours: 8, idleMinutes: 20, livePollMs: 2000}
webhooks: {listen: "127.0.0.1:8089", url: "https://fax.example.com/hook", username: u, password: a-long-password, pollIntervalMs: 600000}
inbound: {escalationCheckMs: 30000, groups: {desk: {members: [], escalateAfterMinutes: 15}}}
office: {timeoutMs: 90000}
`;

const NEW_STYLE = `
api: {baseUrl: sandbox, contactCache: 45s}
dns: {timeout: 1500ms}
smtp:
  socketTimeout: 90s
  greetingDelay: 250ms
  idleSessionTimeout: 5m
  senderAuth: {confirmWait: 36h}
spool: {root: /tmp/spool, stableFor: 1500ms, dedupeWindow: 90m, maxWriteTime: 45m, addressWait: 12h}
imap:
  mailboxes:
    - {host: imap.example.com, user: fax, password: pw, trustedAuthservIds: [mx.example.com], pollInterval: 2m}
queue: {maxAge: 3d, retrySchedule: [10s, 90s, 500ms], pollInterval: 2500ms, lease: 30s,
        reconcileGrace: 7s, scheduleAhead: 90m, keyRecheck: 10m}
notify: {from: f@example.com, transport: "outbox:/tmp/outbox", preferenceRefresh: 2m, inbound: {interval: 30s}}
web: {listen: "127.0.0.1:8025", sessionLifetime: 8h, idleTimeout: 20m, livePoll: 2s}
webhooks: {listen: "127.0.0.1:8089", url: "https://fax.example.com/hook", username: u, password: a-long-password, pollInterval: 10m}
inbound: {escalationCheck: 30s, groups: {desk: {members: [], escalateAfter: 15m}}}
office: {timeout: 90s}
`.replace("members: []", "members: [alice]");

const USERS = "data: /var/lib/faxgate\nusers:\n  - {name: alice, email: alice@example.com, apiKey: k-alice}\n";
const oldText = `${OLD_STYLE.replace("members: []", "members: [alice]")}${USERS}`;
const newText = `${NEW_STYLE}${USERS}`;

function errorOf(fn: () => unknown): FaxgateError {
  try {
    fn();
  } catch (err) {
    if (err instanceof FaxgateError) return err;
    throw err;
  }
  throw new Error("expected a FaxgateError");
}

describe("old keys", () => {
  it("read the same config as today's keys, every renamed key among them", () => {
    const old = parseConfigTextDetailed(oldText, { env: {} });
    const now = parseConfigTextDetailed(newText, { env: {} });
    expect(now.oldKeys).toEqual([]);
    expect(old.config).toEqual(now.config);
    // every row of the table is used once above, so each row's reading is compared
    expect(old.oldKeys.map((u) => u.old.replace(/\[\d+\]/, "[]").replace(".desk.", ".*.")).sort()).toEqual(
      OLD_KEYS.map((k) => k.old).sort(),
    );
    expect(old.oldKeys).toContainEqual({ old: "queue.leaseMs", now: "queue.lease", value: "30s" });
    expect(old.oldKeys).toContainEqual({
      old: "smtp.senderAuth.confirmHours",
      now: "smtp.senderAuth.confirmWait",
      value: "36h",
    });
    expect(old.oldKeys).toContainEqual({
      old: "imap.mailboxes[0].pollSeconds",
      now: "imap.mailboxes[0].pollInterval",
      value: "2m",
    });
    expect(old.oldKeys).toContainEqual({
      old: "queue.retrySchedule",
      now: "queue.retrySchedule",
      value: ["10s", "90s", "500ms"],
    });
  });

  it("an old key beside its new one is refused, naming both", () => {
    const err = errorOf(() => parseConfigText("api: {baseUrl: sandbox}\nqueue: {leaseMs: 1000, lease: 2s}\n"));
    expect(err.message).toMatch(/queue\.leaseMs: an old key next to queue\.lease: keep only queue\.lease/);
    expect(err.field).toBe("queue.leaseMs");
  });

  it("an old key's value out of bounds is named under both names", () => {
    const err = errorOf(() => parseConfigText("api: {baseUrl: sandbox}\nqueue: {leaseMs: 100}\n"));
    expect(err.message).toMatch(/queue\.lease: must be at least 500ms, got "100ms" \(written as queue\.leaseMs\)/);
    const text = errorOf(() => parseConfigText("api: {baseUrl: sandbox}\nqueue: {leaseMs: soon}\n"));
    expect(text.message).toMatch(/queue\.leaseMs: an old key; its value must be a number of milliseconds/);
  });

  it('a duration not written as one ("5 minutes", a bare number) is refused, naming the key and the forms', () => {
    const err = errorOf(() => parseConfigText('api: {baseUrl: sandbox}\nqueue: {pollInterval: "5 minutes"}\n'));
    expect(err.field).toBe("queue.pollInterval");
    expect(err.message).toMatch(
      /queue\.pollInterval: must be a duration such as "30s", "5m", "24h" or "90d" \(a number and one of ms, s, m, h, d\), got "5 minutes"/,
    );
    const bare = errorOf(() =>
      parseConfigText("api: {baseUrl: sandbox}\nweb: {listen: '127.0.0.1:1', livePoll: 500}\n"),
    );
    expect(bare.message).toMatch(/web\.livePoll: expected string/);
  });
});

describe("faxgate config check and the daemon", () => {
  const dirs: string[] = [];
  let daemon: TestDaemon | null = null;
  afterAll(async () => {
    await daemon?.stop();
  });

  it("config check names each old key with the value to write, and passes", async () => {
    const dir = tempFolder("old-keys");
    dirs.push(dir);
    const file = path.join(dir, "faxgate.yaml");
    writeFileSync(file, oldText);
    const r = await runCli(["config", "check", "--config", file]);
    expect(r.code, r.stderr).toBe(0);
    const warned = r.stderr.split("\n").filter((l) => l.startsWith("warning: ") && l.includes("old"));
    expect(warned).toHaveLength(OLD_KEYS.length);
    expect(r.stderr).toContain('warning: queue.leaseMs is an old key; write queue.lease: "30s" instead');
    expect(r.stderr).toContain(
      'warning: queue.retrySchedule: numbers of seconds are an old form; write queue.retrySchedule: ["10s", "90s", "500ms"]',
    );
    expect(r.stderr).toContain(
      'warning: inbound.groups.desk.escalateAfterMinutes is an old key; write inbound.groups.desk.escalateAfter: "15m" instead',
    );
    // the resolved config is printed in today's keys and forms, and reads back as the same config
    expect(r.stdout).toMatch(/^ {2}lease: 30s$/m);
    expect(r.stdout).not.toContain("leaseMs");
    expect(parseConfigText(r.stdout.replaceAll("****", "masked-secret"), { env: {} })).toEqual(
      parseConfigText(
        newText
          .replace("k-alice", "masked-secret")
          .replace("password: pw", "password: masked-secret")
          .replace("password: a-long-password", "password: masked-secret"),
        { env: {} },
      ),
    );
  });

  it("a daemon with an old-style config starts, logs each old key once, and again on reload", async () => {
    daemon = await startDaemon({
      name: "old-keys",
      config: {
        queue: { pollIntervalMs: 300, retrySchedule: [1, 2] },
        smtp: { listen: ["127.0.0.1:0"], socketTimeoutMs: 90_000 },
      },
    });
    const lines = () =>
      daemon!.out.text
        .split("\n")
        .filter((l) => l.includes("is an old key") || l.includes("an old form"))
        .map((l) => JSON.parse(l) as { level: number; key: string; now: string; value: unknown });
    expect(
      lines()
        .map((l) => l.key)
        .sort(),
    ).toEqual(["queue.pollIntervalMs", "queue.retrySchedule", "smtp.socketTimeoutMs"]);
    expect(lines().every((l) => l.level === 40)).toBe(true);
    expect(lines()).toContainEqual(
      expect.objectContaining({ key: "queue.pollIntervalMs", now: "queue.pollInterval", value: "300ms" }),
    );
    daemon.child.kill("SIGHUP");
    // the reload logs them in the table's order: queue.pollIntervalMs is the last of the three
    await daemon.out.waitFor(/queue\.pollIntervalMs is an old key[\s\S]*queue\.pollIntervalMs is an old key/);
    expect(lines()).toHaveLength(6);
  });
});
