import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { simpleParser } from "mailparser";
import { generate } from "selfsigned";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log/logger.js";
import { createTransport, maskUrl } from "../../src/notify/transport.js";
import { SmtpSink } from "./smtp-sink.js";
import { tempFolder } from "../tmp-dir.js";

let dir: string;
beforeEach(async () => {
  dir = tempFolder("test");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const mail = (messageId: string) => ({
  from: "faxgate@example.com",
  to: "alice@example.com",
  bcc: "admin@example.com",
  subject: "Fax to +1 555-123-4567 delivered, 1 page",
  text: "hello",
  html: "<p>hello</p>",
  messageId,
});

describe("outbox transport", () => {
  it("writes one whole .eml per mail, no temp files left, and a retry replaces instead of adding", async () => {
    const outbox = path.join(dir, "outbox");
    const t = createTransport(`outbox:${outbox}`, silentLogger());
    const pdf = path.join(dir, "fax.pdf");
    await (await import("node:fs/promises")).writeFile(pdf, Buffer.from("%PDF-1.4 test"));
    const info = await t.send({
      ...mail("<a.1@example.com>"),
      attachments: [{ filename: "fax.pdf", path: pdf, contentType: "application/pdf" }],
    });
    expect(info.messageId).toBe("<a.1@example.com>");
    await t.send(mail("<a.1@example.com>"));
    await t.send(mail("<b.2@example.com>"));
    const files = (await readdir(outbox)).sort();
    expect(files).toEqual(["a.1@example.com.eml", "b.2@example.com.eml"]);
    const parsed = await simpleParser(await readFile(path.join(outbox, files[1]!)));
    expect(parsed.subject).toBe("Fax to +1 555-123-4567 delivered, 1 page");
    expect(parsed.messageId).toBe("<b.2@example.com>");
    // the outbox is the record of who got the mail, so it keeps the Bcc
    expect(JSON.stringify(parsed.bcc)).toContain("admin@example.com");
    t.close();
  });
});

describe("SMTP transport", () => {
  it("hands mail to the relay, with AUTH from the URL", async () => {
    const sink = await new SmtpSink({ auth: { user: "relay", pass: "s3cr:et/pw" } }).start();
    try {
      const t = createTransport(sink.url, silentLogger());
      await t.send(mail("<c.3@example.com>"));
      t.close();
      const [m] = await sink.waitFor(1);
      expect(m!.envelope.to.sort()).toEqual(["admin@example.com", "alice@example.com"]);
      expect(m!.parsed.messageId).toBe("<c.3@example.com>");
      // Bcc travels in the envelope only
      expect(m!.raw.toString()).not.toMatch(/^bcc:/im);
    } finally {
      await sink.stop();
    }
  });

  it("smtps:// with AUTH and TLS options in the URL", async () => {
    const pems = await generate([{ name: "commonName", value: "relay.test" }], {
      keyType: "ec",
      curve: "P-256",
      algorithm: "sha256",
    });
    const sink = await new SmtpSink({
      auth: { user: "relay", pass: "pw" },
      tls: { key: pems.private, cert: pems.cert },
    }).start();
    try {
      // a self-signed relay certificate is refused unless the URL says otherwise
      const strict = createTransport(sink.url, silentLogger());
      await expect(strict.send(mail("<e.5@example.com>"))).rejects.toThrow(/certificate/i);
      strict.close();
      const t = createTransport(`${sink.url}?tls.rejectUnauthorized=false`, silentLogger());
      await t.send(mail("<e.6@example.com>"));
      t.close();
      const msgs = await sink.waitFor(1);
      expect(msgs.map((m) => m.parsed.messageId)).toEqual(["<e.6@example.com>"]);
    } finally {
      await sink.stop();
    }
  });

  it("refused AUTH is an error that does not carry the password", async () => {
    const sink = await new SmtpSink({ auth: { user: "relay", pass: "right" } }).start();
    try {
      const t = createTransport(`smtp://relay:wrongpass@127.0.0.1:${sink.port}`, silentLogger());
      const err = await t.send(mail("<d.4@example.com>")).catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(Error);
      expect(String((err as Error).message)).not.toContain("wrongpass");
      t.close();
    } finally {
      await sink.stop();
    }
  });

  it("a bad spec is a config error that masks the password", () => {
    expect(() => createTransport("ftp://x", silentLogger())).toThrow(/notify.transport/);
    expect(maskUrl("smtps://user:topsecret@relay.example.com:465")).toBe("smtps://user:***@relay.example.com:465");
    // a password with raw "/", "@", "#": hidden whole, never its tail
    expect(maskUrl("smtps://user:to/p@se#cret@relay.example.com:465")).toBe("smtps://user:***@relay.example.com:465");
    expect(() => createTransport("outbox:", silentLogger())).toThrow(/needs a folder/);
  });
});
