// A received fax routed by its reply code (issue 51), end to end on the real parts: a [reply] fax
// sent by alice through the dispatcher to the emulator over HTTPS; its reply sheet taken from the
// PDF the service transmitted, printed by Ghostscript at 200x100 dpi, speckled, behind a typed
// answer; faxed back to bob's number by the emulator; found by the OCR duty's look (pdftoppm in the
// sandbox, zxing-wasm) and routed to alice, with a ledger row saying why and both timelines
// linked in the console's API. The same sheet signed with another key routes by the rules and says so.
// All of it twice: with OCR on (the look runs in OCR's slot, before the text), and with OCR off
// (the duty only looks: a reply's code must not depend on an office paying for OCR).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { encodeReplyCode } from "../../src/reply-sheet/reply-code.js";
import { replySheetPage } from "../../src/reply-sheet/reply-page.js";
import { ledgerRows } from "../../src/store/sql/ledger.js";
import { getReceivedText } from "../../src/store/sql/received-text.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { PASSWORDS, signIn } from "../web/rig.js";
import { arrive, faxedBack, replyGateway, routedAfterLook, sentWithSheet } from "./reply-rig.js";

const TOOLS = ["gs", "pdftoppm"].filter((t) => findExecutable(t) === null);
if (TOOLS.length) console.warn(`reply routing test skipped: ${TOOLS.join(", ")} not installed`);
const NO_OCR = findExecutable("ocrmypdf") === null;
if (NO_OCR) console.warn("reply routing test with OCR on skipped: ocrmypdf not installed");

let rig: TestGateway;

async function consoleGet(user: keyof typeof PASSWORDS, url: string) {
  const s = await signIn(rig.url("web"), user, PASSWORDS[user]);
  const r = await fetch(`${rig.url("web")}${url}`, { headers: { cookie: s.cookie } });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe.skipIf(TOOLS.length > 0).each([
  { ocr: true, skip: NO_OCR },
  { ocr: false, skip: false },
])("a received fax with a reply code (OCR on: $ocr)", ({ ocr, skip }) => {
  let jobId = "";
  let sheet: Uint8Array = new Uint8Array();

  beforeAll(async () => {
    if (skip) return;
    rig = await startGateway(replyGateway({ ocr }));
    // alice's [reply] fax, sent to the service like any other
    ({ jobId, sheet } = await sentWithSheet(rig));
  }, 120_000);
  afterAll(() => (skip ? undefined : rig?.stop()));

  it.skipIf(skip)(
    "routes to the sender of the sent fax, says why in the ledger, and links both timelines",
    async () => {
      const { fax, events } = await routedAfterLook(rig, await arrive(rig, await faxedBack(sheet, 51)));
      // received with bob's key (or the operator's, whose admin key sees the account's faxes too)
      expect(["bob", "ops"]).toContain(fax.user);
      expect(events.map((e) => `${e.action}: ${e.detail ?? ""}`)).toEqual([
        expect.stringMatching(/^stored: /),
        "routed: rule waiting for its reply code to be looked for: ",
        `reply to: ${jobId}`,
        `routed: by its reply code to the sender of job ${jobId}: mail to alice`,
      ]);
      // alice is mailed the fax; the user whose key received it is not
      const mailed = await rig.gw.store.listNotifications({ kind: "inbound" });
      const about = mailed.filter((n) => (n.payload as { receivedId?: string }).receivedId === fax.id);
      expect(about.map((n) => n.user)).toEqual(["alice"]);
      // the hold's row, then the reply's: the ledger says why it went to alice
      const rows = (await ledgerRows(rig.gw.store.sql, {})).filter(
        (r) => r.action === "routed" && r.object_id === fax.id,
      );
      expect(rows.map((r) => JSON.parse(r.detail))).toEqual([
        expect.objectContaining({ route: "waiting for its reply code to be looked for" }),
        { route: "reply code", deliveries: 1, after: `its reply code verified: a reply to job ${jobId}` },
      ]);
      // the console: the sent fax's timeline names the reply, the reply names the sent fax, alice may open both
      const job = await consoleGet("alice", `/api/jobs/${jobId}`);
      expect(
        (job.body.timeline as Array<{ transition: string; detail: string }>).filter((e) => e.transition === "reply"),
      ).toEqual([expect.objectContaining({ detail: fax.id })]);
      const received = await consoleGet("alice", `/api/received/${fax.id}`);
      expect(received.status).toBe(200);
      expect(received.body.access).toBe("mailed");
      expect(
        (received.body.timeline as Array<{ action: string; detail: string }>).find((e) => e.action === "reply to")
          ?.detail,
      ).toBe(jobId);
      // a stranger to the fax (bob's number took it, but the route gave it to alice) still cannot open the sent fax
      expect((await consoleGet("bob", `/api/jobs/${jobId}`)).status).toBe(404);
      // OCR off: the pages were looked at and no text was read (nothing tried, so nothing said)
      if (!ocr) {
        const text = await getReceivedText(rig.gw.store.sql, fax.id);
        expect(text).toMatchObject({ state: "unreadable", lastError: "OCR is off", body: null, waitsUntil: null });
      }
    },
    300_000,
  );

  it.skipIf(skip)(
    "a code signed with another key routes by the rules, and the timeline says it did not verify",
    async () => {
      const forged = await replySheetPage(encodeReplyCode(Buffer.alloc(32, 9), { jobId, owner: "alice" }));
      const { fax, events } = await routedAfterLook(rig, await arrive(rig, await faxedBack(forged, 52)));
      expect(events.map((e) => `${e.action}: ${e.detail ?? ""}`)).toEqual([
        expect.stringMatching(/^stored: /),
        "routed: rule waiting for its reply code to be looked for: ",
        "reply code: reply code did not verify; routed by the rules",
        "routed: after a reply code that did not verify: rule default",
      ]);
      const mailed = await rig.gw.store.listNotifications({ kind: "inbound" });
      expect(
        mailed.filter((n) => (n.payload as { receivedId?: string }).receivedId === fax.id).map((n) => n.user),
      ).toEqual([fax.user]);
      const job = await rig.gw.store.listEvents(jobId);
      expect(job.filter((e) => e.transition === "reply")).toHaveLength(1);
    },
    300_000,
  );
});
