// The rules that decide who may fax from a mailbox, on the header texts providers really write.
import { describe, expect, it } from "vitest";
import { parseSubjectOverrides } from "../../src/intake/mail/subject-overrides.js";
import { addressMessage, subjectTags } from "../../src/mailbox/addressing.js";
import { parseAuthResults, proveSender } from "../../src/mailbox/sender-proof.js";
import { UserIndex } from "../../src/auth/user-index.js";

const users = new UserIndex([
  { name: "alice", email: "alice@acme.com", aliases: ["a.smith@mail.acme.com"], apiKey: "k" },
]);
const prove = (from: string[], authResults: string[]) =>
  proveSender({ from, authResults, trustedAuthservIds: ["mx.google.com"], users });

describe("Authentication-Results", () => {
  it("reads Gmail's header with its comments and properties", () => {
    const h = parseAuthResults(
      "mx.google.com;\r\n       dkim=pass header.i=@acme.com header.s=google header.b=Ab12Cd34;\r\n       spf=pass (google.com: domain of alice@acme.com designates 209.85.220.41 as permitted sender) smtp.mailfrom=alice@acme.com;\r\n       dmarc=pass (p=REJECT sp=REJECT dis=NONE) header.from=acme.com",
    )!;
    expect(h.authservId).toBe("mx.google.com");
    expect(h.results.map((r) => `${r.method}=${r.result}`)).toEqual(["dkim=pass", "spf=pass", "dmarc=pass"]);
    expect(h.results[2]!.props.get("header.from")).toBe("acme.com");
  });

  it("takes a header without an authserv-id for nobody's", () => {
    expect(
      parseAuthResults("spf=pass (sender IP is 40.107.1.1) smtp.mailfrom=acme.com; dmarc=pass header.from=acme.com"),
    ).toBeNull();
  });

  it("proves a DMARC pass, and an aligned DKIM pass where the domain has no DMARC", () => {
    expect(prove(["alice@acme.com"], ["mx.google.com; dmarc=pass header.from=acme.com"])).toMatchObject({
      ok: true,
      check: expect.stringContaining("DMARC pass"),
    });
    expect(
      prove(
        ["a.smith@mail.acme.com"],
        ["mx.google.com; dkim=pass header.d=acme.com; dmarc=none header.from=mail.acme.com"],
      ),
    ).toMatchObject({ ok: true, check: expect.stringContaining("DKIM pass") });
  });

  it("refuses a DKIM pass of another domain, a DMARC fail with a DKIM pass, and a forged header below the provider's", () => {
    expect(prove(["alice@acme.com"], ["mx.google.com; dkim=pass header.d=mailer.example"])).toMatchObject({
      ok: false,
    });
    expect(
      prove(["alice@acme.com"], ["mx.google.com; dkim=pass header.d=acme.com; dmarc=fail header.from=acme.com"]),
    ).toMatchObject({ ok: false, reason: expect.stringContaining("DMARC fail") });
    expect(
      prove(
        ["alice@acme.com"],
        ["mx.google.com; dmarc=fail header.from=acme.com", "mx.google.com; dmarc=pass header.from=acme.com"],
      ),
    ).toMatchObject({ ok: false });
    expect(prove(["alice@acme.com"], ["evil.example; dmarc=pass header.from=acme.com"])).toMatchObject({
      ok: false,
      claimed: { name: "alice" },
    });
  });

  it("refuses a stranger, and a message with two From: addresses, without naming a user to answer", () => {
    expect(prove(["mallory@acme.com"], ["mx.google.com; dmarc=pass header.from=acme.com"])).toEqual({
      ok: false,
      reason: expect.stringContaining("not the address of a user"),
    });
    expect(prove(["alice@acme.com", "mallory@acme.com"], [])).toMatchObject({ ok: false });
  });
});

describe("addressing a mailbox message", () => {
  const address = (to: Array<{ name?: string; address?: string }>, subject = "") =>
    addressMessage({ to, subject }, "fax@acme.com", "1");

  it("prefers plus addresses, then display names, then subject tags", () => {
    expect(address([{ address: "fax+15551234567@acme.com" }], "[fax 15559999999]")).toMatchObject({
      ok: true,
      from: "plus address",
      destinations: [{ e164: "+15551234567" }],
    });
    expect(address([{ name: "(555) 123-4567", address: "fax@acme.com" }])).toMatchObject({
      ok: true,
      from: "display name",
      destinations: [{ e164: "+15551234567" }],
    });
    expect(address([{ address: "fax@acme.com" }], "Invoice [fax 5551234567, +44 20 7946 0000]")).toMatchObject({
      ok: true,
      from: "subject",
      destinations: [{ e164: "+15551234567" }, { e164: "+442079460000" }],
    });
  });

  it("gives names to the contact lookup and ignores other mailboxes' addresses", () => {
    expect(address([{ address: "fax+acme.billing@acme.com" }])).toMatchObject({
      ok: true,
      destinations: [{ kind: "name", name: "acme billing" }],
    });
    expect(
      address([{ address: "other+15551234567@acme.com" }, { name: "15551234567", address: "bob@acme.com" }]),
    ).toMatchObject({ ok: false, reason: expect.stringContaining("no fax number was found") });
  });

  it("refuses the whole message when one destination is unusable", () => {
    expect(address([{ address: "fax+15551234567@acme.com" }, { address: "fax+12@acme.com" }])).toMatchObject({
      ok: false,
      reason: expect.stringContaining('"12"'),
    });
  });

  it("reads subject tags in one pass and takes them out of the subject", () => {
    expect(subjectTags("[fax 1] a [FAX: 2,3] [cover]")).toEqual(["1", "2", "3"]);
    expect(subjectTags("[fax ".repeat(50_000))).toEqual([]);
    // the cover shows the subject without them, as it does without [cover] and [at ...]
    expect(parseSubjectOverrides("Invoice 42 [fax 15551234567]").subject).toBe("Invoice 42");
  });
});
