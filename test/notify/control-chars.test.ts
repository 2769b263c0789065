// Raw CR/LF from outside (a CSID the remote fax machine sends, a file name, a subject) must never
// forge lines in a notification: the one rendering step puts every value on one line.
import { describe, expect, it } from "vitest";
import { composeInbound } from "../../src/notify/inbound-mail.js";
import { oneLineText, renderHtml, renderText } from "../../src/notify/mail-body.js";

describe("control characters in notification values", () => {
  it("a CSID with CR/LF stays on its own line of the inbound notice", () => {
    const m = composeInbound(
      {
        messageId: "m1",
        status: "success",
        from: null,
        csid: "ACME\r\nFrom: ceo@bank.example\r\n\r\nWire the money",
        pages: 1,
        duration: 30,
        createdAt: "2026-11-22T10:00:00Z",
        resultCode: "0",
        resultInfo: null,
        errorCode: null,
        errorInfo: null,
      },
      "UTC",
    );
    const text = renderText(m.blocks);
    expect(text).not.toMatch(/^From: ceo@bank\.example/m);
    expect(text).not.toMatch(/^Wire the money/m);
    expect(text).toContain("ACME From: ceo@bank.example Wire the money");
    expect(renderHtml(m.subject, m.blocks)).not.toMatch(/\r/);
    expect(oneLineText(m.subject)).not.toMatch(/[\r\n]/);
  });

  it("file names in lists, fields and paragraphs are one line", () => {
    const text = renderText([
      { kind: "list", items: ["a.pdf\r\nX-Injected: 1"] },
      { kind: "fields", rows: [["File", "b.pdf\nBcc: x@evil.example"]] },
      { kind: "para", text: "line one\r\nline two\u0000" },
    ]);
    expect(text).not.toMatch(/^X-Injected/m);
    expect(text).not.toMatch(/^Bcc:/m);
    expect(text).toContain("line one line two");
    expect(text).not.toMatch(/[\r\u0000]/);
  });
});
