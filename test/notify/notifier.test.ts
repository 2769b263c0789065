// Outcome notifications end to end: real final jobs (dispatcher against the emulator), the real
// Store, the users' preferences from the emulator, mail through a real SMTP sink.
import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { simpleParser } from "mailparser";
import { afterEach, describe, expect, it } from "vitest";
import { TEST_KEYS } from "../helpers/emulator.js";
import { Rig } from "./rig.js";
import { tempFolder } from "../tmp-dir.js";

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

async function setup(opts: ConstructorParameters<typeof Rig>[0] = {}): Promise<Rig> {
  rig = await new Rig(opts).start();
  return rig;
}

const notifLog = (r: Rig, verb: string) =>
  r.logs.filter((l) => l.component === "notify" && String(l.msg).startsWith(verb));

describe("outcome mail and the send preference", () => {
  it("All: one mail per final job, with the fax PDF byte for byte as the service returns it", async () => {
    const r = await setup();
    const job = await r.finalJob("alice", ["+15551234567"], {
      meta: {
        leftOut: [{ name: "logo.png", reason: "an inline image too small to be a document" }],
        origin: { messageId: "<orig-1@example.com>" },
      },
    });
    expect(job.state).toBe("delivered");
    expect(await r.notifier({ transport: r.smtpTransport() }).runOnce()).toBe(1);

    const [m] = await r.sink.waitFor(1);
    expect(r.sink.messages).toHaveLength(1);
    expect(m!.envelope.to).toEqual(["alice@example.com"]);
    const pages = job.recipients[0]!.pages!;
    expect(m!.parsed.subject).toBe(`Fax to +1 555-123-4567 delivered, ${pages} page${pages === 1 ? "" : "s"}`);
    const text = m!.parsed.text!;
    expect(text).toContain(job.id);
    expect(text).toContain(job.recipients[0]!.messageId!);
    expect(text).toMatch(/E[SD]T/); // the account's timezone is America/New_York
    expect(text).toContain("logo.png: an inline image too small to be a document");
    expect(m!.parsed.html).toContain("<table");
    expect(m!.parsed.inReplyTo).toBe("<orig-1@example.com>");
    expect(m!.parsed.headers.get("auto-submitted")).toBe("auto-generated");

    const [pdf] = m!.parsed.attachments;
    expect(pdf!.contentType).toBe("application/pdf");
    const fromService = path.join(r.dir, "direct.pdf");
    await r.clientFor("alice").downloadFax(job.recipients[0]!.messageId!, fromService);
    expect(Buffer.compare(pdf!.content, await readFile(fromService))).toBe(0);
    // the temp copy is gone once the mail is handed over
    expect(await readdir(path.join(r.dir, "data", "tmp", "notify"))).toEqual([]);

    expect((await r.store.listNotifications({ jobId: job.id }))[0]!.state).toBe("sent");
    expect(notifLog(r, "NOTIFIED")).toHaveLength(1);
    expect(await r.metrics.text()).toMatch(/faxgate_notifications_total\{kind="outcome",result="sent"\} 1/);
    expect(r.logText()).not.toContain(TEST_KEYS.alice);
    expect(m!.raw.toString()).not.toContain(TEST_KEYS.alice);
  });

  it("Failure (bob): a delivered fax is skipped, a busy one is mailed with the reason and no attachment", async () => {
    const r = await setup();
    const ok = await r.finalJob("bob", ["+15551234567"]);
    const busy = await r.finalJob("bob", ["+15551230000"]);
    expect(busy.state).toBe("failed");
    const n = r.notifier({ transport: r.smtpTransport() });
    expect(await n.runOnce()).toBe(2);

    expect((await r.store.listNotifications({ jobId: ok.id }))[0]!.state).toBe("skipped");
    const [m] = await r.sink.waitFor(1);
    expect(r.sink.messages).toHaveLength(1);
    expect(m!.envelope.to).toEqual(["bob@example.com"]);
    expect(m!.parsed.subject).toBe("Fax to +1 555-123-0000 failed: busy");
    expect(m!.parsed.text).toContain("could not be delivered: busy");
    expect(m!.parsed.attachments).toHaveLength(0);
    expect(notifLog(r, "SKIPPED")).toHaveLength(1);
  });

  it("several recipients: one mail that counts them", async () => {
    const r = await setup();
    await r.finalJob("alice", ["+15551234567", "+15551239999", "+15551230001"]);
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    const [m] = await r.sink.waitFor(1);
    expect(m!.parsed.subject).toBe("Fax to 3 recipients: 2 delivered, 1 failed");
    expect(m!.parsed.text).toContain("no answer");
  });

  it("None: no mail (skipped); with an admin copy configured, the failure still reaches the admin only", async () => {
    const r = await setup({ adminCopy: "fax-admin@example.com" });
    await r.setPreferences("bob@example.com", { emailNotifySendOption: "None" });
    await r.setPreferences("alice@example.com", { emailNotifySendOption: "None" });
    const delivered = await r.finalJob("alice", ["+15551234567"]);
    await r.finalJob("bob", ["+15551230000"]);
    await r.notifier({ transport: r.smtpTransport() }).runOnce();

    expect((await r.store.listNotifications({ jobId: delivered.id }))[0]!.state).toBe("skipped");
    const [m] = await r.sink.waitFor(1);
    expect(r.sink.messages).toHaveLength(1);
    expect(m!.envelope.to).toEqual(["fax-admin@example.com"]);
    expect(m!.parsed.subject).toBe("Fax to +1 555-123-0000 failed: busy");
  });

  it("admin copy: a failure mail to the user goes Bcc to the admin, a success mail does not", async () => {
    const r = await setup({ adminCopy: "fax-admin@example.com" });
    await r.setPreferences("alice@example.com", { emailNotifySendIncAttachment: false });
    await r.finalJob("alice", ["+15551230000"]);
    await r.finalJob("alice", ["+15551234567"]);
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    const mails = await r.sink.waitFor(2);
    const failed = mails.find((m) => /failed/.test(m.parsed.subject!))!;
    const ok = mails.find((m) => /delivered/.test(m.parsed.subject!))!;
    expect(failed.envelope.to.sort()).toEqual(["alice@example.com", "fax-admin@example.com"]);
    expect(failed.raw.toString()).not.toMatch(/^bcc:/im);
    expect(ok.envelope.to).toEqual(["alice@example.com"]);
    expect(ok.parsed.attachments).toHaveLength(0);
  });

  it("an unknown preference value counts as All and is logged once per user and value", async () => {
    const r = await setup();
    await r.setPreferences("bob@example.com", { emailNotifySendOption: "Sometimes" });
    await r.finalJob("bob", ["+15551234567"]);
    await r.finalJob("bob", ["+15551239999"]);
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    await r.sink.waitFor(2);
    expect(r.sink.messages.map((m) => m.parsed.subject).sort()).toEqual([
      "Fax to +1 555-123-4567 delivered, 1 page",
      "Fax to +1 555-123-9999 delivered, 1 page",
    ]);
    const warned = r.logs.filter((l) => l.value === "Sometimes");
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ user: "bob", field: "emailNotifySendOption", level: 40 });
  });

  it("a preference changed on the service takes effect after the refresh interval", async () => {
    const r = await setup({ refreshMs: 60_000 });
    const n = r.notifier({ transport: r.smtpTransport() });
    await r.finalJob("alice", ["+15551234567"]);
    await n.runOnce();
    await r.sink.waitFor(1);

    await r.setPreferences("alice@example.com", { emailNotifySendOption: "None" });
    r.offset += 61_000;
    const second = await r.finalJob("alice", ["+15551239999"]);
    await n.runOnce();
    expect((await r.store.listNotifications({ jobId: second.id }))[0]!.state).toBe("skipped");
    expect(r.sink.messages).toHaveLength(1);
  });
});

describe("durable, exactly once", () => {
  it("a restart between the outcome and its mail sends exactly one mail", async () => {
    const r = await setup();
    const first = r.notifier({ transport: r.smtpTransport() });
    await first.stop(); // the gateway stops before the notifier ran
    const job = await r.finalJob("alice", ["+15551234567"]);

    const reopened = r.openStore();
    const second = r.notifier({ transport: r.smtpTransport() }, reopened);
    expect(await second.runOnce()).toBe(1);
    const third = r.notifier({ transport: r.smtpTransport() }, r.openStore());
    expect(await third.runOnce()).toBe(0);
    await r.sink.waitFor(1);
    expect(r.sink.messages).toHaveLength(1);
    expect(await reopened.listNotifications({ jobId: job.id })).toHaveLength(1);
  });

  it("relay down: deferred on a schedule, then delivered once when it is back, with the same Message-ID", async () => {
    const r = await setup();
    await r.setPreferences("alice@example.com", { emailNotifySendIncAttachment: false });
    const job = await r.finalJob("alice", ["+15551234567"]);
    await r.sink.stop();
    const n = r.notifier();
    expect(await n.runOnce()).toBe(1);
    let [note] = await r.store.listNotifications({ jobId: job.id });
    expect(note!.state).toBe("pending");
    expect(note!.lastError).toMatch(/ECONNREFUSED|connect/i);
    const due = Date.parse(note!.nextAttemptAt) - r.clock.now();
    expect(due).toBeGreaterThan(25_000);
    expect(due).toBeLessThan(40_000);
    expect(notifLog(r, "DEFERRED")).toHaveLength(1);

    // not due yet: nothing is tried
    expect(await n.runOnce()).toBe(0);
    // the second failure waits longer
    r.offset += 40_000;
    expect(await n.runOnce()).toBe(1);
    [note] = await r.store.listNotifications({ jobId: job.id });
    expect(Date.parse(note!.nextAttemptAt) - r.clock.now()).toBeGreaterThan(100_000);

    await r.sink.start(); // same port
    r.offset += 200_000;
    expect(await n.runOnce()).toBe(1);
    const [m] = await r.sink.waitFor(1);
    expect(r.sink.messages).toHaveLength(1);
    expect(m!.parsed.messageId).toMatch(/^<\d{8}T\d{6}Z\.n\d+\.[0-9a-f]{12}\.faxgate@gateway\.example>$/);
    [note] = await r.store.listNotifications({ jobId: job.id });
    expect(note!.state).toBe("sent");
    expect(note!.attempts).toBe(3);
    r.offset += 3_600_000;
    expect(await n.runOnce()).toBe(0);
    expect(await r.metrics.text()).toMatch(/faxgate_notifications_total\{kind="outcome",result="deferred"\} 2/);
  });

  it("gives up after about two days and says so loudly", async () => {
    const r = await setup();
    await r.sink.stop();
    await r.store.enqueueNotification({
      kind: "rejected",
      user: "alice",
      dedupeKey: "rejected:test-1",
      payload: { file: "a.pdf", reason: "no fax number was found" },
    });
    const n = r.notifier();
    const start = r.clock.now();
    let tries = 0;
    for (let i = 0; i < 80; i++) {
      tries += await n.runOnce();
      if ((await r.store.listNotifications({ kind: "rejected" }))[0]!.state !== "pending") break;
      r.offset += 3_700_000;
    }
    const [note] = await r.store.listNotifications({ kind: "rejected" });
    expect(note!.state).toBe("failed");
    expect(note!.lastError).toMatch(/ECONNREFUSED|connect/i);
    const hours = (r.clock.now() - start) / 3_600_000;
    expect(hours).toBeGreaterThan(40);
    expect(hours).toBeLessThan(52);
    expect(tries).toBe(note!.attempts);
    const failed = r.logs.filter((l) => l.component === "notify" && String(l.msg).startsWith("FAILED"));
    expect(failed).toHaveLength(1);
    expect(failed[0]!.level).toBe(50);
  });
});

describe("mail that always goes out", () => {
  it("input refused after the SMTP reply (a corrupt job) is mailed even with preference None", async () => {
    const r = await setup();
    await r.setPreferences("bob@example.com", { emailNotifySendOption: "None" });
    const orig = path.join(r.dir, "weird.pdf");
    await (await import("node:fs/promises")).writeFile(orig, "not really a pdf");
    await r.store.enqueueCorrupt({
      source: "spool",
      user: "bob",
      reason: "the PDF cannot be read",
      original: { path: orig, name: "weird.pdf", contentType: "application/pdf" },
    });
    await r.store.enqueueNotification({
      kind: "rejected",
      user: "bob",
      dedupeKey: "rejected:spool-1",
      payload: { file: "invoice.pdf", reason: "no fax number was found in the file name, a ticket or the document" },
    });
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    const mails = await r.sink.waitFor(2);
    expect(mails.map((m) => m.parsed.subject).sort()).toEqual([
      'Fax not sent: "invoice.pdf": no fax number was found in the file name, a ticket or the document',
      'Fax not sent: "weird.pdf": the PDF cannot be read',
    ]);
    expect(mails.every((m) => m.envelope.to.join() === "bob@example.com")).toBe(true);
  });

  it("key expiry goes to the user and the admin copy", async () => {
    const r = await setup({ adminCopy: "fax-admin@example.com" });
    await r.store.enqueueNotification({
      kind: "key-expiry",
      user: "bob",
      dedupeKey: "key-expiry:k1",
      payload: { keyName: "bob printer", expiresAt: "2026-12-01T15:00:00.000Z" },
    });
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    const [m] = await r.sink.waitFor(1);
    expect(m!.envelope.to.sort()).toEqual(["bob@example.com", "fax-admin@example.com"]);
    expect(m!.parsed.subject).toBe('Fax gateway: API key "bob printer" expires on Dec 1, 2026, 10:00:00 AM EST');
    expect(m!.raw.toString()).not.toContain(TEST_KEYS.bob);
  });
});

describe("outbox transport from the config", () => {
  it("writes the outcome mail as a whole .eml file", async () => {
    const r = await setup();
    const outbox = tempFolder("test");
    try {
      await r.finalJob("alice", ["+15551230000"]);
      const n = r.notifier({ notify: r.notifyConfig({ transport: `outbox:${outbox}` }) });
      expect(await n.runOnce()).toBe(1);
      const files = await readdir(outbox);
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/\.eml$/);
      const parsed = await simpleParser(await readFile(path.join(outbox, files[0]!)));
      expect(parsed.subject).toBe("Fax to +1 555-123-0000 failed: busy");
      expect(parsed.text).toContain("busy");
    } finally {
      await rm(outbox, { recursive: true, force: true });
    }
  });
});
