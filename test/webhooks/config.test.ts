// The `webhooks` config key: checked at start like every other key, its password masked and
// counted among the secrets.
import { describe, expect, it } from "vitest";
import { maskSecrets, parseConfigText, secretValues } from "../../src/config/load.js";

const base =
  "api:\n  baseUrl: https://api.example.test\nusers:\n  - { name: alice, email: alice@example.com, apiKey: k }\n";

describe("webhooks config", () => {
  it("names each bad field", () => {
    let err: Error | null = null;
    try {
      parseConfigText(
        `${base}webhooks:\n  listen: nowhere\n  url: ftp://x.example\n  username: "a:b"\n  password: short\n  colour: red\n`,
        { env: {} },
      );
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).toMatch(/webhooks\.listen: expected "host:port"/);
    expect(err?.message).toMatch(/webhooks\.url: expected an http:\/\/ or https:\/\/ URL/);
    expect(err?.message).toMatch(/webhooks\.username: expected a user name without ":"/);
    expect(err?.message).toMatch(/webhooks\.password: use at least 12 characters/);
    expect(err?.message).toMatch(/webhooks: unknown key "colour"/);
  });

  it("takes a good one with a slow poll by default; the password is a secret", () => {
    const c = parseConfigText(
      `${base}webhooks:\n  listen: 127.0.0.1:8089\n  url: https://fax.example.com/hook\n  username: faxgate\n  password: \${HOOK_PW}\n`,
      { env: { HOOK_PW: "a-long-webhook-secret" } },
    );
    expect(c.webhooks).toMatchObject({
      listen: "127.0.0.1:8089",
      url: "https://fax.example.com/hook",
      pollInterval: 300_000,
    });
    expect(JSON.stringify(maskSecrets(c))).not.toContain("a-long-webhook-secret");
    expect(secretValues(c)).toContain("a-long-webhook-secret");
  });

  it("judges the URL by parsing it: an upper-case scheme is http(s), another scheme is not", () => {
    const hook = (url: string) =>
      `${base}webhooks:\n  listen: 127.0.0.1:8089\n  url: "${url}"\n  username: faxgate\n  password: a-long-webhook-secret\n`;
    expect(parseConfigText(hook("HTTPS://Fax.Example.com/hook"), { env: {} }).webhooks?.url).toBe(
      "HTTPS://Fax.Example.com/hook",
    );
    for (const bad of ["javascript://fax.example.com/hook", "file:///etc/hook", "mailto:hook@example.com"])
      expect(() => parseConfigText(hook(bad), { env: {} })).toThrow(
        /webhooks\.url: expected an http:\/\/ or https:\/\/ URL/,
      );
  });
});
