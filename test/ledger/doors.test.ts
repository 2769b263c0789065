// Rows from the doors, driven through the real thing: a fax mailed to the gateway's SMTP listener
// by a real client is one "sent" row per recipient, by its sender, through the smtp door, with
// each number only as its keyed hash.
import nodemailer from "nodemailer";
import { afterEach, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { testLedger } from "../helpers/ledger.js";
import { consoleGateway } from "../web/rig.js";

let rig: TestGateway | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

describe("ledger rows from the doors", () => {
  it("a fax mailed in is a sent row per recipient: the sender, the smtp door, the number hashed", async () => {
    rig = await startGateway(consoleGateway({ delayMs: 200 }));
    const info = await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({
        from: "alice@example.com",
        to: ["15551234567@fax.example.com", "15557654321@fax.example.com"],
        subject: "two numbers",
        text: "a short letter",
      });
    expect(info.response).toMatch(/^250 /);
    const id = /queued as (\S+)/.exec(info.response)![1]!;
    const ledger = testLedger(rig.gw.store);
    // recorded before the 250: no waiting
    const rows = await ledger.rows({ object: { kind: "job", id } });
    expect(rows.map((r) => [r.action, r.actor, r.door, r.object])).toEqual([
      ["sent", { kind: "person", id: "alice" }, "smtp", { kind: "recipient", id: `${id}#0` }],
      ["sent", { kind: "person", id: "alice" }, "smtp", { kind: "recipient", id: `${id}#1` }],
    ]);
    expect((await ledger.rows({ number: "+15557654321" })).map((r) => r.object.id)).toEqual([`${id}#1`]);
    expect(JSON.stringify(rows)).not.toMatch(/5551234567|5557654321/);
    expect((await ledger.verify()).broken).toBeNull();
  }, 120_000);
});
