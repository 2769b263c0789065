// Received faxes: injected on the emulator, found by the poller in the user's inbound history,
// kept by the intake behind it (the default route: the receiving user's mail), mailed by the
// notifier exactly once across poller instances and restarts.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { PDFDocument } from "@cantoo/pdf-lib";
import { afterEach, describe, expect, it } from "vitest";
import { inboundStateKey } from "../../src/inbound/poller.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { Rig } from "./rig.js";

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

async function pdf(pages: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < pages; i++) doc.addPage([612, 792]).drawText(`received page ${i + 1}`, { x: 50, y: 700 });
  return doc.save();
}

describe("inbound faxes by mail", () => {
  it("the first start does not mail the backlog; a new fax is mailed once across two pollers and a restart", async () => {
    const r = (rig = await new Rig().start());
    await r.inbound("alice@example.com", "+15557654321", await pdf(1));
    const poller = r.poller();
    await poller.runOnce();
    expect(await r.store.listNotifications({ kind: "inbound" })).toHaveLength(0);
    expect(await r.store.listReceived()).toHaveLength(0);
    expect(await r.store.getState(inboundStateKey("alice"))).not.toBeNull();

    const id = await r.inbound("alice@example.com", "+15557654321", await pdf(2), "ACME LAB");
    await poller.runOnce();
    // a second gateway instance on the same store, and the same one again: no second notification
    await r.poller(r.openStore()).runOnce();
    await poller.runOnce();
    const notes = await r.store.listNotifications({ kind: "inbound" });
    expect(notes).toHaveLength(1);
    expect(notes[0]!.dedupeKey).toBe(`inbound:${id}`);
    const kept = await r.store.listReceived();
    expect(kept.map((f) => [f.messageId, f.user, f.pages])).toEqual([[id, "alice", 2]]);

    expect(await r.notifier({ transport: r.smtpTransport() }).runOnce()).toBe(1);
    // restarted notifier and poller: nothing more
    expect(await r.notifier({ transport: r.smtpTransport() }, r.openStore()).runOnce()).toBe(0);
    await r.poller(r.openStore()).runOnce();
    expect(await r.notifier({ transport: r.smtpTransport() }).runOnce()).toBe(0);

    const [m] = await r.sink.waitFor(1);
    expect(r.sink.messages).toHaveLength(1);
    expect(m!.envelope.to).toEqual(["alice@example.com"]);
    expect(m!.parsed.subject).toBe("Fax received from +1 555-765-4321, 2 pages");
    expect(m!.parsed.text).toContain("ACME LAB");
    expect(m!.parsed.text).toContain(id);
    expect(m!.parsed.text).toMatch(/E[SD]T/);
    const [att] = m!.parsed.attachments;
    const direct = path.join(r.dir, "in.pdf");
    await r.clientFor("alice").downloadFax(id, direct);
    expect(Buffer.compare(att!.content, await readFile(direct))).toBe(0);
    expect(r.logText()).not.toContain(TEST_KEYS.alice);
  });

  it("mailBacklog: the first start mails what is already there", async () => {
    const r = (rig = await new Rig({ mailBacklog: true }).start());
    const older = await r.inbound("alice@example.com", "+15557654321", await pdf(1));
    const newer = await r.inbound("alice@example.com", "+15557654322", await pdf(1));
    await r.poller().runOnce();
    // kept and queued oldest first, though the history reads newest first (listed newest first)
    expect((await r.store.listNotifications({ kind: "inbound" })).map((n) => n.dedupeKey)).toEqual([
      `inbound:${newer}`,
      `inbound:${older}`,
    ]);
    expect(await r.notifier({ transport: r.smtpTransport() }).runOnce()).toBe(2);
    const mails = await r.sink.waitFor(2);
    // both, once each (queued oldest first, but sent in parallel: SMTP never promises an order)
    expect(mails.map((m) => m.parsed.subject).sort()).toEqual([
      "Fax received from +1 555-765-4321, 1 page",
      "Fax received from +1 555-765-4322, 1 page",
    ]);
  });

  it("receive preferences: None mails nothing, Failure skips a good reception, attachment off leaves the PDF out", async () => {
    const r = (rig = await new Rig().start());
    const poller = r.poller();
    await poller.runOnce(); // first look: nothing there yet
    await r.inbound("bob@example.com", "+15557654321", await pdf(1)); // bob: receive None
    await poller.runOnce();
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    expect((await r.store.listNotifications({ kind: "inbound" })).map((n) => n.state)).toEqual(["skipped"]);

    await r.setPreferences("alice@example.com", { emailNotifyReceiveOption: "Failure" });
    // the intake read alice's identity to attribute bob's fax (GET /v1/me, with her preferences):
    // read afresh rather than wait out preferenceRefresh
    r.directory.invalidate("alice");
    await r.inbound("alice@example.com", "+15557654321", await pdf(1));
    await poller.runOnce();
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    expect((await r.store.listNotifications({ kind: "inbound" })).map((n) => n.state)).toEqual(["skipped", "skipped"]);
    expect(r.sink.messages).toHaveLength(0);

    // a fresh directory read (new rig state is per test, so invalidate instead of waiting)
    await r.setPreferences("alice@example.com", {
      emailNotifyReceiveOption: "All",
      emailNotifyReceiveIncAttachment: false,
    });
    r.directory.invalidate("alice");
    await r.inbound("alice@example.com", "+15557654329", await pdf(3));
    await poller.runOnce();
    await r.notifier({ transport: r.smtpTransport() }).runOnce();
    const [m] = await r.sink.waitFor(1);
    expect(m!.parsed.subject).toBe("Fax received from +1 555-765-4329, 3 pages");
    expect(m!.parsed.attachments).toHaveLength(0);
  });

  it("started as the daemon starts them, the poller and the notifier deliver a new fax on their own", async () => {
    const r = (rig = await new Rig().start());
    await r.setPreferences("alice@example.com", { emailNotifyReceiveIncAttachment: false });
    const poller = r.poller();
    await poller.runOnce(); // the first look, so the fax below is new
    const fast = r.poller(r.store, {
      notify: { ...r.notifyConfig(), inbound: { enabled: true, interval: 100, mailBacklog: false } },
      users: () => [{ name: "alice", email: "alice@example.com", aliases: [], apiKey: TEST_KEYS.alice }],
      logger: r.logger,
    });
    const notifier = r.notifier({ transport: r.smtpTransport(), pollMs: 100 });
    fast.start();
    notifier.start();
    try {
      await r.inbound("alice@example.com", "+15557654321", await pdf(1));
      const [m] = await r.sink.waitFor(1);
      expect(m!.parsed.subject).toBe("Fax received from +1 555-765-4321, 1 page");
    } finally {
      await fast.stop();
      await notifier.stop();
    }
    expect(r.sink.messages).toHaveLength(1);
  });
});
