// Valid but dangerous settings: named at start (a RISKY log line) and by `faxgate doctor`.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfigText, validateConfig } from "../../src/config/load.js";
import { riskySettings } from "../../src/config/risky-settings.js";
import { runCli } from "../helpers/cli.js";
import { startGateway } from "../helpers/gateway.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";

let dir: string;
beforeAll(() => {
  dir = tempFolder("risky");
});
afterAll(() => removeFolder(dir));

const safe = {
  api: { baseUrl: "https://fax.example.test" },
  data: "/tmp/x",
  smtp: { listen: ["127.0.0.1:2525"] },
  admin: { listen: "127.0.0.1:9464" },
  users: [{ name: "a", email: "a@example.com", apiKey: "k" }],
};

describe("riskySettings", () => {
  it("says nothing about the defaults and loopback listeners", () => {
    expect(riskySettings(validateConfig(safe))).toEqual([]);
    expect(
      riskySettings(
        validateConfig({ ...safe, admin: { listen: "[::1]:9464" }, smtp: { listen: ["localhost:25"], auth: "off" } }),
      ),
    ).toEqual([]);
  });

  it.each([
    [{ admin: { listen: "0.0.0.0:9464" } }, /^admin\.listen 0\.0\.0\.0:9464 is not loopback/],
    [{ admin: { listen: "[::]:9464" } }, /^admin\.listen \[::\]:9464 is not loopback/],
    [
      { smtp: { listen: ["127.0.0.1:2525"], trustedNetworks: ["0.0.0.0/0"] } },
      /^smtp\.trustedNetworks 0\.0\.0\.0\/0 covers every IPv4 address/,
    ],
    [
      { smtp: { listen: ["127.0.0.1:2525"], trustedNetworks: ["::/0"] } },
      /^smtp\.trustedNetworks ::\/0 covers every IPv6 address/,
    ],
    [{ smtp: { listen: ["127.0.0.1:2525"], trustedNetworks: ["10.0.0.0/4"] } }, /covers 2\^28 IPv4 addresses/],
    [
      { smtp: { listen: ["0.0.0.0:25"], auth: "off", tls: { cert: "c", key: "k" } } },
      /^smtp\.auth is "off" on a non-loopback listener \(0\.0\.0\.0:25\)/,
    ],
    [
      { smtp: { listen: ["127.0.0.1:2525"], trustedNetworks: ["172.16.0.0/12"] } },
      /^smtp\.trustedNetworks 172\.16\.0\.0\/12 is a Docker bridge range/,
    ],
    [
      { smtp: { listen: ["127.0.0.1:2525"], trustedNetworks: ["172.17.0.0/16"] } },
      /^smtp\.trustedNetworks 172\.17\.0\.0\/16 is a Docker bridge range/,
    ],
    [
      { smtp: { listen: ["192.0.2.10:25"] } },
      /^smtp\.listen 192\.0\.2\.10:25 is not loopback and smtp\.tls is not set/,
    ],
  ])("%j", (over, warning) => {
    const risks = riskySettings(validateConfig({ ...safe, ...over }));
    expect(risks).toHaveLength(1);
    expect(risks[0]).toMatch(warning);
  });

  it("a webhook URL in clear beyond loopback", () => {
    const hook = (url: string) =>
      riskySettings({ ...validateConfig(safe), webhooks: { listen: "127.0.0.1:8443", url } } as never);
    expect(hook("http://fax.example.com/faxgate/events")).toEqual([
      expect.stringMatching(/^webhooks\.url http:\/\/fax\.example\.com is http:\/\/ on a non-loopback host/),
    ]);
    expect(hook("https://fax.example.com/faxgate/events")).toEqual([]);
    expect(hook("http://127.0.0.1:8443/faxgate/events")).toEqual([]);
  });

  it("the Docker image trusts no network by default", () => {
    const text = readFileSync(path.resolve(__dirname, "../../docker/faxgate.yaml"), "utf8");
    const c = parseConfigText(text.replace(/^secretsFile:.*$/m, ""), {
      env: { FAXGATE_ADMIN_KEY: "a", ALICE_FAX_KEY: "k" },
    });
    expect(c.smtp!.trustedNetworks).toEqual([]);
    expect(riskySettings(c).filter((r) => r.includes("trustedNetworks"))).toEqual([]);
  });

  it("web and webhooks without TLS beyond loopback, when this version has them", () => {
    const c = {
      ...validateConfig(safe),
      web: { listen: "0.0.0.0:8025" },
      webhooks: { listen: "127.0.0.1:8443" },
    } as never;
    expect(riskySettings(c)).toEqual([
      expect.stringMatching(/^web\.listen 0\.0\.0\.0:8025 is not loopback and web\.tls is not set/),
    ]);
  });
});

describe("where the admin sees them", () => {
  it("the daemon logs a RISKY line at start", async () => {
    const g = await startGateway({
      name: "risky",
      config: { smtp: { listen: ["127.0.0.1:0"], trustedNetworks: ["0.0.0.0/0"] } },
    });
    try {
      const lines = g.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.filter((l) => l.msg === "RISKY setting").map((l) => l.risk)).toEqual([
        expect.stringMatching(/^smtp\.trustedNetworks 0\.0\.0\.0\/0/),
      ]);
    } finally {
      await g.stop();
    }
  });

  it("doctor lists them as WARN", async () => {
    const f = path.join(dir, "risky.yaml");
    writeFileSync(
      f,
      `api: {baseUrl: "https://127.0.0.1:9", timeoutMs: 1000}\ndata: ${dir}/d\nsmtp: {listen: ["127.0.0.1:0"], trustedNetworks: ["::/0"]}\nusers: [{name: a, email: a@example.com, apiKey: k}]\n` +
        // doctor converts a page when the converter is on: seconds, and not what this is about
        "office: {soffice: false}\n",
    );
    const r = await runCli(["doctor", "--config", f], { timeoutMs: 60_000 });
    expect(r.stdout).toMatch(/^WARN {2}risky setting: smtp\.trustedNetworks ::\/0 covers every IPv6 address/m);
  });

  it("config check prints them as warnings", async () => {
    const f = path.join(dir, "hook.yaml");
    writeFileSync(
      f,
      `api: {baseUrl: "https://127.0.0.1:9"}\ndata: ${dir}/d\nwebhooks: {listen: "127.0.0.1:0", url: "http://fax.example.com/hook", username: u, password: a-long-password-here}\nusers: [{name: a, email: a@example.com, apiKey: k}]\n`,
    );
    const r = await runCli(["config", "check", "--config", f]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^warning: webhooks\.url http:\/\/fax\.example\.com is http:\/\//m);
  });

  describe("settings that contradict notify.attachments", () => {
    const notify = (extra: Record<string, unknown>) => ({
      ...safe,
      web: { listen: "127.0.0.1:8025" },
      notify: { from: "fax@example.com", transport: "outbox:/tmp/o", ...extra },
    });

    it("never or inbound-only with a report on: the mailed report goes without the page", () => {
      const never = riskySettings(validateConfig(notify({ attachments: "never", report: "always" })));
      expect(never).toEqual([
        expect.stringMatching(
          /^notify\.report is "always" while notify\.attachments is "never": the mailed transmission report goes without the fax's first page, its subject/,
        ),
      ]);
      const perUser = riskySettings(
        validateConfig({
          ...notify({ attachments: "inbound-only" }),
          users: [{ name: "a", email: "a@example.com", apiKey: "k", report: "failed" }],
        }),
      );
      expect(perUser).toEqual([
        expect.stringMatching(/^users\[a\]\.report is "failed" while notify\.attachments is "inbound-only"/),
      ]);
      // the same report under the default rule is no contradiction
      expect(riskySettings(validateConfig(notify({ report: "always" })))).toEqual([]);
    });

    it("never with an inbound rule that mails the fax, and never without a console", () => {
      const withMail = validateConfig({
        ...notify({ attachments: "never" }),
        inbound: { routes: [{ name: "front desk", deliver: [{ mail: "desk@example.com" }] }] },
      });
      expect(riskySettings(withMail)).toEqual([
        expect.stringMatching(
          /^inbound\.routes\[front desk\] mails desk@example\.com "with the fax", but notify\.attachments is "never"/,
        ),
      ]);
      const { web: _web, ...noConsole } = notify({ attachments: "never" });
      expect(riskySettings(validateConfig(noConsole))).toEqual([
        expect.stringMatching(/^notify\.attachments is "never" and the web console is off/),
      ]);
    });

    it("config check prints the contradiction", async () => {
      const f = path.join(dir, "never.yaml");
      writeFileSync(
        f,
        `api: {baseUrl: "https://127.0.0.1:9"}\ndata: ${dir}/d\nweb: {listen: "127.0.0.1:0"}\nnotify: {from: fax@example.com, transport: "outbox:${dir}/o", attachments: never, report: always}\nusers: [{name: a, email: a@example.com, apiKey: k}]\n`,
      );
      const r = await runCli(["config", "check", "--config", f]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/^warning: notify\.report is "always" while notify\.attachments is "never"/m);
    });
  });
});
