import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CONFIG_BYTES, loadConfigFile, maskSecrets, parseConfigText, secretValues } from "../../src/config/load.js";
import { FaxgateError } from "../../src/errors.js";
import { tempFolder } from "../tmp-dir.js";

const dirs: string[] = [];
function tempFile(text: string): string {
  const dir = tempFolder("config");
  dirs.push(dir);
  const f = path.join(dir, "faxgate.yaml");
  writeFileSync(f, text);
  return f;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function errorOf(fn: () => unknown): FaxgateError {
  try {
    fn();
  } catch (err) {
    if (err instanceof FaxgateError) return err;
    throw err;
  }
  throw new Error("expected a FaxgateError");
}

const minimal = `
api:
  baseUrl: https://fax.example.test
users:
  - name: alice
    email: alice@example.com
    apiKey: \${ALICE_KEY}
`;

describe("config", () => {
  it("the commented example config is valid once its secrets are in its secrets file", () => {
    const example = readFileSync(path.resolve(__dirname, "../../config/faxgate.example.yaml"), "utf8");
    const env = tempFile('ALICE_FAX_KEY=k1\n# a comment\nexport FRONTDESK_FAX_KEY="k2"\n');
    expect(example).toMatch(/^secretsFile: \/etc\/faxgate\/faxgate\.env$/m);
    const c = loadConfigFile(tempFile(example.replaceAll("/etc/faxgate/faxgate.env", env)), {
      env: { FRONTDESK_FAX_KEY: "from-env-loses" },
    });
    expect(c.users.map((u) => u.name)).toEqual(["alice", "frontdesk"]);
    expect(c.users[0]!.apiKey).toBe("k1");
    expect(c.users[1]!.apiKey).toBe("k2");
    expect(c.smtp!.domains).toEqual(["fax.example.com"]);
  });

  it("substitutes ${ENV} and ${ENV:-default}, and names the key of an unset variable", () => {
    const c = parseConfigText(minimal, { env: { ALICE_KEY: "secret-1" } });
    expect(c.users[0]!.apiKey).toBe("secret-1");
    const d = parseConfigText(minimal.replace("${ALICE_KEY}", "${NOPE:-fallback}"), { env: {} });
    expect(d.users[0]!.apiKey).toBe("fallback");
    const err = errorOf(() => parseConfigText(minimal, { env: {} }));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toContain("users[0].apiKey");
    expect(err.message).toContain("ALICE_KEY");
  });

  it("a user without apiKey is taken only when the gateway can mint their key", () => {
    const keyless = `api:\n  baseUrl: https://fax.example.test\nusers:\n  - name: bob\n    email: bob@example.com\n    serviceUserId: u-bob\n`;
    const err = errorOf(() => parseConfigText(keyless, { env: {} }));
    expect(err.message).toMatch(/users\[0\]\.apiKey: user "bob" has no apiKey: .*directory\.keys and api\.adminKey/);
    const minting = keyless.replace(
      "https://fax.example.test\n",
      "https://fax.example.test\n  adminKey: admin-1\ndirectory:\n  keys:\n    sealKey: seal-key-of-at-least-32-characters-00\n",
    );
    const c = parseConfigText(minting, { env: {} });
    expect(c.users[0]).toMatchObject({ name: "bob", apiKey: "", serviceUserId: "u-bob" });
    // an empty key written is a mistake, not a request to mint
    expect(
      errorOf(() =>
        parseConfigText(minting.replace("    serviceUserId", '    apiKey: ""\n    serviceUserId'), { env: {} }),
      ).message,
    ).toMatch(/users\[0\]\.apiKey: must not be empty/);
  });

  it("every error names the key and what was expected", () => {
    const err = errorOf(() =>
      parseConfigText(
        `api:\n  baseUrl: http://plain.example\n  concurency: 3\nsmtp:\n  listen: ["nope"]\n  auth: maybe\nusers:\n  - name: alice\n    email: not-an-address\n    apiKey: x\n    password: hunter2\n`,
        { env: {} },
      ),
    );
    expect(err.message).toMatch(/api\.baseUrl: must be an https: URL or "sandbox"/);
    expect(err.message).toMatch(/api: unknown key "concurency"/);
    expect(err.message).toMatch(/smtp\.listen\[0\]: expected "host:port"/);
    expect(err.message).toMatch(/smtp\.auth: expected one of "off", "optional", "required"/);
    expect(err.message).toMatch(/users\[0\]\.email: expected an e-mail address/);
    expect(err.message).toMatch(/users\[0\]\.password: expected a hash made by `faxgate passwd`/);
    expect(err.field).toBe("api.baseUrl");
  });

  it("reads a listen address as the listeners do: a port past 65535 is refused at load, not at bind", () => {
    const err = errorOf(() =>
      parseConfigText(`api:\n  baseUrl: sandbox\nsmtp:\n  listen: ["127.0.0.1:70000"]\nusers: []\n`, { env: {} }),
    );
    expect(err.message).toMatch(/smtp\.listen\[0\]: expected "host:port" with a port up to 65535/);
  });

  it("refuses rules that span keys: duplicate users, auth required without hashes", () => {
    const dup = errorOf(() =>
      parseConfigText(
        `api: {baseUrl: "https://x.example"}\nusers:\n  - {name: a, email: a@example.com, apiKey: k}\n  - {name: b, email: A@example.com, apiKey: k2}\n`,
        { env: {} },
      ),
    );
    expect(dup.message).toContain('users[1].email: A@example.com also belongs to user "a"');
    const auth = errorOf(() =>
      parseConfigText(`smtp: {auth: required}\nusers:\n  - {name: a, email: a@example.com, apiKey: k}\n`, { env: {} }),
    );
    expect(auth.message).toContain("users[0].password");
  });

  it("verdict headers: the relay check reads failures by default; a pass needs a named relay, a mailbox its provider", () => {
    const base = 'api: {baseUrl: "https://x.example"}\nusers:\n  - {name: a, email: a@example.com, apiKey: k}\n';
    expect(parseConfigText(`${base}smtp: {}\n`, { env: {} }).smtp!.senderAuth.relays).toEqual({
      check: "failures",
      authservIds: [],
    });
    const pass = errorOf(() => parseConfigText(`${base}smtp: {senderAuth: {relays: {check: pass}}}\n`, { env: {} }));
    expect(pass.message).toContain("smtp.senderAuth.relays.authservIds");
    const box = (extra: string) =>
      `${base}imap:\n  mailboxes:\n    - {host: imap.example.com, user: fax@example.com, password: p${extra}}\n`;
    expect(errorOf(() => parseConfigText(box(""), { env: {} })).message).toContain(
      "imap.mailboxes[0].trustedAuthservIds",
    );
    expect(parseConfigText(box(", provider: exchange-online"), { env: {} }).imap!.mailboxes[0]!.provider).toBe(
      "exchange-online",
    );
  });

  it('a config file without api.baseUrl is refused naming the key; "sandbox" must be said', () => {
    const f = tempFile(`users:\n  - {name: alice, email: alice@example.com, apiKey: k}\n`);
    const err = errorOf(() => loadConfigFile(f, { env: {} }));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.field).toBe("api.baseUrl");
    expect(err.message).toMatch(/api\.baseUrl: missing: name the fax service .*"sandbox"/);
    // with other errors too, every one is named
    const both = errorOf(() => parseConfigText(`api: {timeoutMs: 5}\n`, { env: {} }));
    expect(both.message).toMatch(/api\.baseUrl: missing/);
    expect(both.message).toMatch(/api\.timeoutMs/);
    expect(loadConfigFile(tempFile(`api: {baseUrl: sandbox}\n`), { env: {} }).api.baseUrl).toBe("sandbox");
  });

  it("a section left out carries every default of its keys: code reads them, never writes its own", () => {
    const c = parseConfigText("api:\n  baseUrl: sandbox\nspool:\n  root: /tmp/spool\n");
    // the dispatcher's tuning, once defaulted in code (?? 60_000...), as the schema gives it
    expect(c.queue).toMatchObject({ lease: 60_000, reconcileGrace: 5000, perNumberConcurrency: 1 });
    expect(c.queue).toMatchObject({ scheduleAhead: 0, unknownResultTries: 1, historyPageSize: 500 });
    expect(c.queue).toMatchObject({ keyRecheck: 300_000, resultRules: [] });
    expect(c.api).toMatchObject({ historyPerMinute: 8, dispatchShare: 0.5, contactCache: 30_000 });
    expect(c.smtp).toBeUndefined();
    expect(c.spool).toMatchObject({ faxPrefix: "strip", addressWait: 24 * 3_600_000 });
    expect(c.office.queuePerUser).toBe(3);
    const mx = parseConfigText("api:\n  baseUrl: sandbox\nsmtp:\n  domains: [fax.example.com]\n");
    expect(mx.smtp?.senderAuth).toMatchObject({ maxUnverifiedSessions: 3, confirmWait: 24 * 3_600_000 });
  });

  it("reports YAML syntax errors with the line", () => {
    const err = errorOf(() => parseConfigText("api:\n  baseUrl: [unclosed\n", { env: {} }));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toMatch(/not valid YAML at line \d/);
  });

  it("refuses a config file of more than 1 MB before reading it, and says so", () => {
    const big = `api: {baseUrl: sandbox}\ndata: "${"x".repeat(MAX_CONFIG_BYTES)}"\n`;
    const err = errorOf(() => parseConfigText(big, { env: {} }));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toMatch(/at most 1048576 \(1 MB\)/);
    // just under the bound it is read as usual (and refused for what it says, not for its size)
    const under = errorOf(() =>
      parseConfigText(`api: {baseUrl: sandbox}\ndata: "${"x".repeat(MAX_CONFIG_BYTES - 100)}"\nnope: 1\n`, { env: {} }),
    );
    expect(under.message).toMatch(/nope/);
  });

  it("resolves relative paths against the config file folder", () => {
    const f = tempFile(
      `api: {baseUrl: sandbox}\ndata: ./state\nspool: {root: spool}\nnotify: {from: fax@example.com, transport: "outbox:out"}\nusers: []\n`,
    );
    const c = loadConfigFile(f, { env: {} });
    expect(c.data).toBe(path.join(path.dirname(f), "state"));
    expect(c.spool!.root).toBe(path.join(path.dirname(f), "spool"));
    expect(c.notify!.transport).toBe(`outbox:${path.join(path.dirname(f), "out")}`);
  });

  it("a missing file is CONFIG_NOT_FOUND naming the file", () => {
    const err = errorOf(() => loadConfigFile("/nonexistent/faxgate.yaml"));
    expect(err.code).toBe("CONFIG_NOT_FOUND");
    expect(err.message).toContain("/nonexistent/faxgate.yaml");
  });

  it("masks every secret, including passwords inside transport URLs", () => {
    const c = parseConfigText(
      `api: {baseUrl: "https://x.example", adminKey: admin-secret}\nnotify: {from: f@example.com, transport: "smtps://mailer:relay-pass@relay.example:465"}\nusers:\n  - {name: a, email: a@example.com, apiKey: user-secret, password: "scrypt$1$2$3$abc$def"}\n`,
      { env: {} },
    );
    const text = JSON.stringify(maskSecrets(c));
    for (const s of ["admin-secret", "user-secret", "relay-pass", "scrypt$1$2$3$abc$def"])
      expect(text).not.toContain(s);
    expect(text).toContain("smtps://mailer:****@relay.example:465");
  });

  it("database: a PostgreSQL URL, its password masked and counted as a secret; anything else is refused by name", () => {
    const c = parseConfigText(
      `api: {baseUrl: sandbox}\ndatabase: "postgres://faxgate:\${PGPW}@db.example:5432/faxgate"\nusers: []\n`,
      { env: { PGPW: "db-pass-1" } },
    );
    expect(c.database).toBe("postgres://faxgate:db-pass-1@db.example:5432/faxgate");
    const text = JSON.stringify(maskSecrets(c));
    expect(text).not.toContain("db-pass-1");
    expect(text).toContain("postgres://faxgate:****@db.example:5432/faxgate");
    expect(secretValues(c)).toContain("db-pass-1");
    expect(parseConfigText("api: {baseUrl: sandbox}\nusers: []\n", { env: {} }).database).toBeUndefined();
    const err = errorOf(() =>
      parseConfigText("api: {baseUrl: sandbox}\ndatabase: mysql://x/y\nusers: []\n", { env: {} }),
    );
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toContain("database");
  });
});
