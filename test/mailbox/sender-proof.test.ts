// The rules that decide who may fax from a mailbox, on the header texts providers really write.
import { describe, expect, it } from "vitest";
import { parseSubjectOverrides } from "../../src/intake/mail/subject-overrides.js";
import { addressMessage, subjectTags } from "../../src/mailbox/addressing.js";
import { proveSender } from "../../src/mailbox/sender-proof.js";
import { UserIndex } from "../../src/auth/user-index.js";

const users = new UserIndex([
  { name: "alice", email: "alice@acme.com", aliases: ["a.smith@mail.acme.com"], apiKey: "k" },
]);
const prove = (from: string[], authResults: string[], provider: "other" | "exchange-online" = "other") =>
  proveSender({
    from,
    authResults,
    trustedAuthservIds: provider === "other" ? ["mx.google.com"] : [],
    provider,
    users,
  });

// Exchange Online's header names no authserv-id (its real shape, folded as Outlook writes it)
const EXO =
  "spf=pass (sender IP is 40.107.1.1)\r\n smtp.mailfrom=acme.com; dkim=pass (signature was verified)\r\n header.d=acme.com;dmarc=pass action=none header.from=acme.com;compauth=pass reason=100";

describe("the mailbox provider's Authentication-Results", () => {
  it("an id-less header is nobody's, unless the mailbox says its provider is Exchange Online", () => {
    expect(prove(["alice@acme.com"], [EXO])).toMatchObject({ ok: false, claimed: { name: "alice" } });
    expect(prove(["alice@acme.com"], [EXO], "exchange-online")).toMatchObject({
      ok: true,
      check: "DMARC pass for acme.com (Exchange Online)",
    });
  });

  it("a person who left the directory is refused saying so, a stranger as no user", () => {
    const withLeaver = new UserIndex([{ name: "alice", email: "alice@acme.com", aliases: [], apiKey: "k" }], (login) =>
      login.toLowerCase() === "erin@acme.com" ? "erin" : null,
    );
    const from = (a: string) =>
      proveSender({
        from: [a],
        authResults: [],
        trustedAuthservIds: ["mx.google.com"],
        provider: "other",
        users: withLeaver,
      });
    expect(from("ERIN@acme.com")).toMatchObject({ ok: false, reason: expect.stringContaining("has left") });
    expect(from("mallory@acme.com")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("is not the address of a user"),
    });
  });

  it("only the topmost header counts: an id-less one on top hides a trusted-id one below it", () => {
    const r = prove(["alice@acme.com"], [EXO, "mx.google.com; dmarc=pass header.from=acme.com"]);
    expect(r).toMatchObject({ ok: false, reason: expect.stringContaining("no authserv-id, not by mx.google.com") });
    // under the switch, a header of another host on top is not Microsoft's either
    expect(
      prove(["alice@acme.com"], ["mx.forger.example; dmarc=pass header.from=acme.com", EXO], "exchange-online"),
    ).toMatchObject({ ok: false });
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
