// notify.attachments, the gateway's own say over the fax riding along in mail (a clinic's PHI):
// `never` and `inbound-only` keep the PDF out of outcome mails whatever the service preference
// says, and with the console on each mail links to the fax there instead: a plain URL, sign-in
// needed, no token in it. Real jobs, the emulator's preferences, a real SMTP sink.
import { PDFDocument } from "@cantoo/pdf-lib";
import { afterEach, describe, expect, it } from "vitest";
import { Rig } from "./rig.js";

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

async function pdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.addPage([612, 792]).drawText("received page", { x: 50, y: 700 });
  return doc.save();
}

const CONSOLE = "https://fax.clinic.example";

describe("notify.attachments", () => {
  it("service (default): the outcome mail carries the PDF as the preference says, and links to the console", async () => {
    const r = (rig = await new Rig().start());
    const job = await r.finalJob("alice", ["+15551234567"]);
    await r.notifier({ transport: r.smtpTransport(), consoleUrl: () => CONSOLE }).runOnce();
    const [m] = await r.sink.waitFor(1);
    expect(m!.parsed.attachments).toHaveLength(1);
    expect(m!.parsed.text).toContain(`See this fax in the console (sign in first): ${CONSOLE}/m?k=job&id=${job.id}&t=`);
  });

  it("never: no PDF in the outcome mail although the preference asks for it; the link is the only way to the fax", async () => {
    const r = (rig = await new Rig().start());
    const job = await r.finalJob("alice", ["+15551234567"]);
    await r
      .notifier({
        transport: r.smtpTransport(),
        notify: r.notifyConfig({ attachments: "never" }),
        consoleUrl: () => `${CONSOLE}/`,
      })
      .runOnce();
    const [m] = await r.sink.waitFor(1);
    expect(m!.parsed.attachments).toHaveLength(0);
    const links = (m!.parsed.text ?? "").match(/https:\/\/\S+/g) ?? [];
    // the whole of every link: the link door, the job id and when it was mailed (for retention.links),
    // nothing that would let anyone in without signing in
    expect(links).toEqual([expect.stringMatching(new RegExp(`^${CONSOLE}/m\\?k=job&id=${job.id}&t=\\d+$`))]);
  });

  it("a console address with a path, a query or a fragment: the link is the page under that path on its origin", async () => {
    const r = (rig = await new Rig().start());
    const job = await r.finalJob("alice", ["+15551234567"]);
    await r.notifier({ transport: r.smtpTransport(), consoleUrl: () => `${CONSOLE}/console?from=mail#top` }).runOnce();
    const [m] = await r.sink.waitFor(1);
    const links = (m!.parsed.text ?? "").match(/https:\/\/\S+/g) ?? [];
    // built by parsing, not by gluing strings: the base's query and fragment do not swallow the page
    expect(links).toEqual([expect.stringMatching(new RegExp(`^${CONSOLE}/console/m\\?k=job&id=${job.id}&t=\\d+$`))]);
  });

  it("inbound-only: the outcome mail goes without the PDF, a received fax still comes with it", async () => {
    const r = (rig = await new Rig().start());
    await r.setPreferences("alice@example.com", {
      emailNotifyReceiveOption: "All",
      emailNotifyReceiveIncAttachment: true,
    });
    const poller = r.poller();
    await poller.runOnce(); // the first start takes no backlog
    await r.finalJob("alice", ["+15551234567"]);
    const id = await r.inbound("alice@example.com", "+15557654321", await pdf());
    r.directory.invalidate("alice");
    await poller.runOnce();
    await r
      .notifier({
        transport: r.smtpTransport(),
        notify: r.notifyConfig({ attachments: "inbound-only" }),
        consoleUrl: () => CONSOLE,
      })
      .runOnce();
    const mails = await r.sink.waitFor(2);
    const outcome = mails.find((m) => /^Fax to /.test(m.parsed.subject ?? ""))!;
    const inbound = mails.find((m) => /^Fax received/.test(m.parsed.subject ?? ""))!;
    expect(outcome.parsed.attachments).toHaveLength(0);
    expect(inbound.parsed.attachments).toHaveLength(1);
    // the link names the fax as the gateway keeps it (the page also opens by the service's id)
    const [kept] = await r.store.listReceived({ messageId: id });
    expect(inbound.parsed.text).toContain(`${CONSOLE}/m?k=received&id=${kept!.id}&t=`);
  });
});
