// Received faxes kept and routed by inbound.routes: real faxes arriving at the emulator (over
// HTTPS), the real inbound poller and the webhook path's door (ReceivedFaxIntake), the real store,
// a real folder, and the real notifier mailing an SMTP sink.
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { idOf } from "../../src/inbound/folder-delivery.js";
import { validateConfig } from "../../src/config/load.js";
import { InboxEscalation } from "../../src/inbound/escalation.js";
import { emulatorInbound } from "../helpers/emulator.js";
import { pdfWithPages } from "../emulator/api.js";
import { Rig, USERS } from "../notify/rig.js";

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

// as root the rule gives the file to a group of its own, as a practice system's import folder wants
const AS_ROOT = process.getuid?.() === 0;

function config(folder: string, extra: Record<string, unknown> = {}) {
  return validateConfig({
    api: { baseUrl: "sandbox" },
    users: USERS.map((u) => ({ name: u.name, email: u.email, apiKey: u.apiKey })),
    inbound: {
      groups: { referrals: { members: ["alice", "bob"], escalateAfter: "30m" } },
      routes: [
        { name: "referrals line", match: { dialled: "+1555010020#" }, deliver: [{ inbox: "referrals" }] },
        {
          name: "lab results",
          match: { csid: "ACME LAB*" },
          deliver: [
            { folder, name: "{date}_{sender}_{pages}p.pdf", mode: "0640", ...(AS_ROOT ? { group: "nogroup" } : {}) },
            { mail: "lab-desk@example.com" },
          ],
        },
      ],
      ...extra,
    },
  });
}

async function arrive(r: Rig, fields: Parameters<typeof emulatorInbound>[1], pages = 2): Promise<string> {
  return emulatorInbound(r.emu, fields, await pdfWithPages(pages), "scan.pdf");
}

function parts(r: Rig, folder: string) {
  const cfg = config(folder);
  const intake = r.intake(r.store, { inbound: () => cfg.inbound });
  const poller = r.poller(r.store, {
    notify: r.notifyConfig({ inbound: { enabled: true, interval: 60_000, mailBacklog: true } }),
    intake,
  });
  return { cfg, intake, poller };
}

describe("inbound routing", () => {
  it("by the number dialled to a group inbox (members told), by CSID to a folder (file, mode) and a shared mailbox; kept once", async () => {
    rig = await new Rig().start();
    await rig.setPreferences("bob@example.com", {
      emailNotifyReceiveOption: "All",
      emailNotifyReceiveIncAttachment: false,
    });
    const folder = path.join(rig.dir, "lab-import");
    const { intake, poller } = parts(rig, folder);
    const referral = await arrive(
      rig,
      { email: "alice@example.com", callerId: "+15557654321", csid: "DR SMITH", to: "+15550100201" },
      3,
    );
    const lab = await arrive(
      rig,
      { email: "bob@example.com", callerId: "+15559876543", csid: "ACME LAB 2", to: "+15550100999" },
      2,
    );

    // the webhook's door first (the service's own record of the fax), then the poller sees both
    const rec = await rig.clientFor("alice").faxInfo(referral);
    expect(await intake.receive("alice", rec, "webhook")).toBe(true);
    expect(await intake.receive("alice", rec, "webhook")).toBe(true);
    await poller.runOnce();
    await poller.runOnce();

    const kept = await rig.store.listReceived();
    expect(kept.map((f) => f.messageId).sort()).toEqual([referral, lab].sort());
    const ref = kept.find((f) => f.messageId === referral)!;
    expect(ref).toMatchObject({
      user: "alice",
      dialled: "+15550100201",
      sender: "+15557654321",
      csid: "DR SMITH",
      pages: 3,
      groups: ["referrals"],
      state: "new",
      hasDocument: true,
    });
    const labFax = kept.find((f) => f.messageId === lab)!;
    expect(labFax.groups).toEqual([]);
    const timeline = await rig.store.listReceivedEvents(ref.id);
    expect(timeline.map((e) => e.action)).toEqual(["stored", "routed"]);
    expect(timeline[0]!.detail).toContain("(webhook)");
    expect(timeline[1]!.detail).toContain("rule referrals line: group referrals");

    // the folder: one file, named by the pattern, with the rule's mode, the whole PDF
    const files = (await readdir(folder)).filter((f) => !f.startsWith("."));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d{4}-\d{2}-\d{2}_\+15559876543_2p\.pdf$/);
    const st = await stat(path.join(folder, files[0]!));
    expect(st.mode & 0o777).toBe(0o640);
    expect(st.uid).toBe(process.getuid!());
    expect(st.gid).toBe(AS_ROOT ? idOf("/etc/group", "nogroup") : process.getgid!());
    expect(
      (await readFile(path.join(folder, files[0]!))).equals((await rig.store.readReceivedDocument(labFax.id))!),
    ).toBe(true);
    expect((await readdir(folder)).filter((f) => f.startsWith("."))).toEqual([]);

    // mail: both group members for the referral, the shared mailbox (with the PDF) for the lab's fax,
    // and nobody else: bob's own reception of the lab fax matched a rule that does not name him
    await rig.notifier({ transport: rig.smtpTransport() }).runOnce();
    // No fourth mail comes: the pass has sent all it will (the sink keeps a mail before its 250,
    // and runOnce waits for every send), and no notification is left for a later pass.
    const left = (await rig.store.listNotifications()).filter((n) => n.state !== "sent" && n.state !== "skipped");
    expect(left).toEqual([]);
    const mails = rig.sink.messages;
    expect(mails).toHaveLength(3);
    const to = (m: (typeof mails)[number]) => m.envelope.to.join(",");
    expect(mails.map(to).sort()).toEqual(["alice@example.com", "bob@example.com", "lab-desk@example.com"]);
    const bobMail = mails.find((m) => to(m) === "bob@example.com")!;
    expect(bobMail.parsed.text).toContain("shared inbox of group referrals");
    expect(bobMail.parsed.text).toContain("+1 555-010-0201");
    const desk = mails.find((m) => to(m) === "lab-desk@example.com")!;
    expect(desk.parsed.attachments).toHaveLength(1);
    expect(rig.logText()).not.toContain("%PDF");
  });

  it("no rule matched: the default route mails the receiving user as before; an unwritable folder is tried again", async () => {
    rig = await new Rig().start();
    // a folder that cannot be made (under /proc: a recursive mkdir there never returned)
    const { poller } = parts(rig, "/proc/no-such-folder");
    await arrive(rig, { email: "alice@example.com", callerId: "+15557654321", csid: "SOMEONE" });
    const lab = await arrive(rig, { email: "alice@example.com", callerId: "+15557654322", csid: "ACME LAB" });
    await poller.runOnce();
    const kept = await rig.store.listReceived();
    expect(kept).toHaveLength(2);
    const labFax = kept.find((f) => f.messageId === lab)!;
    // not routed yet: the folder write failed, so the poller's cursor stays and it is tried again
    expect((await rig.store.listReceivedEvents(labFax.id)).map((e) => e.action)).toEqual(["stored"]);
    expect(rig.logs.some((l) => l.msg === "received fax could not be written to its folder")).toBe(true);
    await rig.notifier({ transport: rig.smtpTransport() }).runOnce();
    const [m] = await rig.sink.waitFor(1);
    expect(m!.envelope.to).toEqual(["alice@example.com"]);
  });

  it("escalation: an untaken fax is sent again to its group once per interval (manual clock); a taken one is not", async () => {
    rig = await new Rig().start();
    await rig.setPreferences("bob@example.com", {
      emailNotifyReceiveOption: "All",
      emailNotifyReceiveIncAttachment: false,
    });
    const { cfg, poller } = parts(rig, path.join(rig.dir, "f"));
    const first = await arrive(rig, { email: "alice@example.com", callerId: "+15557654321", to: "+15550100200" });
    const second = await arrive(rig, { email: "alice@example.com", callerId: "+15557654329", to: "+15550100202" });
    await poller.runOnce();
    const esc = new InboxEscalation({
      store: rig.store,
      inbound: () => cfg.inbound,
      users: () => USERS,
      logger: rig.logger,
      clock: rig.clock,
    });
    expect(await esc.runOnce()).toBe(0);
    const taken = (await rig.store.listReceived({ messageId: second }))[0]!;
    await rig.store.changeReceived(taken.id, {
      set: { state: "taken", owner: "bob" },
      expect: ["new"],
      event: { action: "taken", actor: "bob", detail: null },
    });
    rig.offset += 29 * 60_000;
    expect(await esc.runOnce()).toBe(0);
    rig.offset += 2 * 60_000;
    expect(await esc.runOnce()).toBe(1);
    expect(await esc.runOnce()).toBe(0);
    rig.offset += 20 * 60_000;
    expect(await esc.runOnce()).toBe(0);
    rig.offset += 11 * 60_000;
    expect(await esc.runOnce()).toBe(1);
    const fax = (await rig.store.listReceived({ messageId: first }))[0]!;
    expect((await rig.store.listReceivedEvents(fax.id)).filter((e) => e.action === "escalated")).toHaveLength(2);
    const escalations = (await rig.store.listNotifications({ kind: "inbound" })).filter((n) =>
      n.dedupeKey.startsWith("escalate:"),
    );
    expect(escalations.map((n) => n.user).sort()).toEqual(["alice", "alice", "bob", "bob"]);
  });

  it("rules are checked at load: errors name the rule", () => {
    expect(() =>
      config("/tmp/x", { routes: [{ name: "pharmacy", match: { user: "zed" }, deliver: [{ inbox: "nope" }] }] }),
    ).toThrow(
      /inbound\.routes\[0\]\.match\.user: rule "pharmacy": "zed" is not a configured user[\s\S]*rule "pharmacy": no group "nope"/,
    );
    expect(() => config("/tmp/x", { routes: [{ name: "rel", deliver: [{ folder: "relative/dir" }] }] })).toThrow(
      /inbound\.routes\[0\]\.deliver\[0\][\s\S]*absolute/,
    );
  });
});
