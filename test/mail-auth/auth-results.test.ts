// The one Authentication-Results parser and the one rule on whose verdict counts, on the header
// texts hosts really write (Gmail, Exchange Online, Postfix with OpenDMARC) and on broken ones.
import { describe, expect, it } from "vitest";
import { Readable } from "node:stream";
import { headerFields, parseAuthResults, readHeaderBlock } from "../../src/mail-auth/auth-results.js";
import { judgeTopmost } from "../../src/mail-auth/relay-verdict.js";

const GMAIL =
  "mx.google.com;\r\n       dkim=pass header.i=@acme.com header.s=google header.b=Ab12Cd34;\r\n       spf=pass (google.com: domain of alice@acme.com designates 209.85.220.41 as permitted sender) smtp.mailfrom=alice@acme.com;\r\n       dmarc=pass (p=REJECT sp=REJECT dis=NONE) header.from=acme.com";
const EXO =
  "spf=pass (sender IP is 40.107.1.1) smtp.mailfrom=acme.com; dkim=pass (signature was verified) header.d=acme.com;dmarc=pass action=none header.from=acme.com;compauth=pass reason=100";

describe("parseAuthResults", () => {
  it("reads Gmail's header with its comments and properties", () => {
    const h = parseAuthResults(GMAIL)!;
    expect(h.authservId).toBe("mx.google.com");
    expect(h.results.map((r) => `${r.method}=${r.result}`)).toEqual(["dkim=pass", "spf=pass", "dmarc=pass"]);
    expect(h.results[2]!.props["header.from"]).toBe("acme.com");
  });

  it("reads Exchange Online's header as one that names nobody", () => {
    const h = parseAuthResults(EXO)!;
    expect(h.authservId).toBeNull();
    expect(h.results.map((r) => `${r.method}=${r.result}`)).toEqual([
      "spf=pass",
      "dkim=pass",
      "dmarc=pass",
      "compauth=pass",
    ]);
  });

  it("reads a version after the id, `none`, and a quoted reason with a semicolon", () => {
    expect(parseAuthResults("mx.example.net 1; none")).toEqual({ authservId: "mx.example.net", results: [] });
    expect(parseAuthResults('mx.example.net; dkim=fail reason="bad; sig" header.d=acme.com')!.results).toHaveLength(1);
  });

  it("refuses to read what does not have the field's shape", () => {
    for (const bad of [
      "",
      " ; ",
      "mx.example.net; dkim",
      "mx.example.net; (unclosed dkim=pass",
      "mx example net; dmarc=pass",
      "a<b>; spf=pass",
    ])
      expect(parseAuthResults(bad), bad).toBeNull();
  });

  it("finds every field, folded, topmost first", () => {
    const block =
      "Authentication-Results: a.example;\r\n spf=fail\r\nSubject: x\r\nauthentication-results: b.example; none";
    expect(headerFields(block, "authentication-results")).toEqual(["a.example; spf=fail", "b.example; none"]);
  });
});

describe("judgeTopmost", () => {
  const named = { authservIds: ["relay.acme.com"], strict: false };
  const anyone = { authservIds: [], strict: false };

  it("a forged pass below the relay's fail changes nothing (no id named)", () => {
    const v = judgeTopmost(
      ["relay.acme.com; spf=fail smtp.mailfrom=alice@acme.com", "evil.example; dkim=pass header.d=acme.com"],
      "acme.com",
      anyone,
    );
    expect(v).toMatchObject({ kind: "fail", method: "spf" });
  });

  it("a pass counts only from a named host; a fail from any", () => {
    const pass = "relay.acme.com; dmarc=pass header.from=acme.com";
    expect(judgeTopmost([pass], "acme.com", anyone)).toMatchObject({ kind: "none", named: false });
    expect(judgeTopmost([pass], "acme.com", named)).toMatchObject({ kind: "pass", by: "relay.acme.com" });
    expect(judgeTopmost(["whoever; dmarc=fail header.from=acme.com"], "acme.com", anyone)).toMatchObject({
      kind: "fail",
      method: "dmarc",
    });
    // spf=fail with the named relay's own DKIM pass is a forwarded mail, not a forgery
    expect(
      judgeTopmost(["relay.acme.com; spf=fail smtp.mailfrom=acme.com; dkim=pass header.d=acme.com"], "acme.com", named),
    ).toMatchObject({ kind: "pass" });
  });

  it("an unreadable or foreign topmost header refuses and nothing lower is read", () => {
    const good = "relay.acme.com; dmarc=pass header.from=acme.com";
    expect(judgeTopmost(["garbage (", good], "acme.com", named)).toMatchObject({ kind: "untrusted" });
    expect(judgeTopmost(["mx.other.example; none", good], "acme.com", named)).toMatchObject({ kind: "untrusted" });
    expect(judgeTopmost([EXO, good], "acme.com", named)).toMatchObject({ kind: "untrusted" });
  });

  it("results about another domain, and DKIM of another organisation, prove nothing", () => {
    expect(judgeTopmost(["relay.acme.com; dmarc=fail header.from=other.example"], "acme.com", named)).toMatchObject({
      kind: "none",
    });
    expect(judgeTopmost(["relay.acme.com; dkim=pass header.d=mailer.example"], "acme.com", named)).toMatchObject({
      kind: "none",
    });
    // relaxed alignment by the public suffix list: mail.acme.co.uk is acme.co.uk's, co.uk is nobody's
    expect(judgeTopmost(["relay.acme.com; dkim=pass header.d=acme.co.uk"], "mail.acme.co.uk", named)).toMatchObject({
      kind: "pass",
    });
    expect(judgeTopmost(["relay.acme.com; dkim=pass header.d=co.uk"], "acme.co.uk", named)).toMatchObject({
      kind: "none",
    });
  });
});

describe("readHeaderBlock", () => {
  // what it did when it made the whole message a string first (the end is now found in the bytes)
  const asText = (b: Buffer): string => {
    const text = b.subarray(0, 256 * 1024).toString("latin1");
    const end = /\r?\n\r?\n/.exec(text);
    return end ? text.slice(0, end.index) : text;
  };

  it("ends at the first empty line, whichever line breaks the message uses", async () => {
    for (const [mail, head] of [
      ["Subject: a\r\nFrom: b\r\n\r\nbody\r\n\r\nmore", "Subject: a\r\nFrom: b"],
      ["Subject: a\nFrom: b\n\nbody", "Subject: a\nFrom: b"],
      ["Subject: a\r\n\nbody", "Subject: a"],
      ["Subject: a\n\r\nbody", "Subject: a"],
      ["\r\n\r\nbody", ""],
      ["\n\nbody", ""],
      ["Subject: no body\r\n", "Subject: no body\r\n"],
    ] as const) {
      expect(await readHeaderBlock(Buffer.from(mail, "latin1"))).toBe(head);
      expect(await readHeaderBlock(Readable.from([Buffer.from(mail, "latin1")]))).toBe(head);
    }
  });

  it("finds what the text search found, on any mix of line breaks, and stops at 256 KB", async () => {
    const bytes = [0x0d, 0x0a, 0x61, 0x3a, 0x20, 0xe9];
    let seed = 54;
    const next = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.from(Array.from({ length: 1 + (next() % 40) }, () => bytes[next() % bytes.length]!));
      expect(await readHeaderBlock(b)).toBe(asText(b));
    }
    const long = Buffer.concat([Buffer.alloc(300 * 1024, "a"), Buffer.from("\r\n\r\nbody")]);
    expect(await readHeaderBlock(long)).toBe(asText(long));
    expect((await readHeaderBlock(long)).length).toBe(256 * 1024);
  });
});
