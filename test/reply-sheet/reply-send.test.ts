// A [reply] job sent through the dispatcher to the emulator over real HTTPS: the fax the service
// transmits ends with the reply sheet, whose code (read back from the service's PDF by pdftoppm
// and zxing-wasm) names the job and its owner under the gateway's key. A job without it has none.
import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { loadReplyKey, ReplySheets, scanForReplyCodes, verifyReplyCode } from "../../src/reply-sheet/index.js";
import { clientFor } from "../helpers/client.js";
import { testDispatcher } from "../helpers/collaborators.js";
import { startTestEmulator } from "../helpers/emulator.js";
import { newJob, tempStore, type TempStore } from "../helpers/store.js";
import { disposeEmulatorAndStore } from "../helpers/teardown.js";
import { EMU_KEY } from "../dispatch/emulator-facts.js";
import { drain, TEST_QUEUE_TIMINGS } from "../dispatch/rig.js";

const HAVE = findExecutable("pdftoppm") !== null;
if (!HAVE) console.warn("reply sheet send test skipped: pdftoppm not installed");

let emu: Awaited<ReturnType<typeof startTestEmulator>> | null = null;
let t: TempStore | null = null;
afterEach(async () => {
  await disposeEmulatorAndStore(emu, t);
  emu = null;
  t = null;
});

describe.skipIf(!HAVE)("a [reply] job at the fax service", () => {
  it("carries the signed reply sheet as its last page; a plain job does not", async () => {
    emu = await startTestEmulator({ delayMs: 20 });
    t = tempStore();
    const client = clientFor(emu, EMU_KEY);
    const dataDir = path.join(t.dir, "data");
    const dispatcher = testDispatcher({
      store: t.store,
      clientFor: () => client,
      api: { baseUrl: emu.baseUrl, concurrency: 4, ratePerSecond: 1000 },
      queue: TEST_QUEUE_TIMINGS,
      replySheets: new ReplySheets({
        key: () => loadReplyKey({ dataDir }),
        dirOf: (id) => t!.store.jobFilesDir(id),
        groupOf: () => undefined,
      }),
    });
    const { job: withSheet } = await t.store.enqueue(newJob(t.dir, { cover: { enabled: false, replySheet: true } }));
    const { job: plain } = await t.store.enqueue(newJob(t.dir, { recipients: [{ number: "+15551230002" }] }));
    await drain({ dispatcher, store: t.store });
    const key = await loadReplyKey({ dataDir });
    const sent = async (id: string) => {
      const r = (await t!.store.getJob(id))!.recipients[0]!;
      const scan = await scanForReplyCodes(path.join(emu!.dataDir, "faxes", `${r.messageId}.pdf`), {
        timeoutMs: 20_000,
        maxPages: 10,
      });
      return { scan };
    };
    const a = await sent(withSheet.id);
    const b = await sent(plain.id);
    // the pages of the PDF the service keeps (its page count is that of the emulated call)
    expect(b.scan).toEqual({ kind: "scanned", texts: [], pages: 1 });
    expect(a.scan.kind).toBe("scanned");
    if (a.scan.kind !== "scanned") return;
    expect(a.scan.pages).toBe(2);
    expect(a.scan.texts).toHaveLength(1);
    expect(verifyReplyCode(key, a.scan.texts[0]!)).toEqual({ kind: "valid", jobId: withSheet.id, owner: "alice" });
    // the sheet is one of the job's files: it goes with them when retention purges the job
    const sheet = path.join(t.store.jobFilesDir(withSheet.id), "reply-sheet.pdf");
    expect(existsSync(sheet)).toBe(true);
    await t.store.retentionPort().removeJobFiles(withSheet.id);
    expect(existsSync(sheet)).toBe(false);
  });
});
