// Fresh stores in temp folders, and small job factories, for the queue's tests (and others').
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Clock } from "../../src/clock.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import type { NewJob } from "../../src/store/types.js";
import type { NewReceivedFax } from "../../src/received/index.js";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import { tempFolder } from "../tmp-dir.js";

/** A real one-page PDF (the emulator reads what it is sent). */
export const TEST_PDF: Buffer = await (async () => {
  const doc = await PDFDocument.create();
  const page = doc.addPage([612, 792]);
  page.drawText("faxgate test page", { x: 72, y: 700, size: 14, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
})();

export interface TempStore {
  store: SqliteStore;
  dir: string;
  /** Another Store on the same file (as the CLI would open it). */
  reopen(): SqliteStore;
  cleanup(): void;
}

export function tempStore(opts: { clock?: Clock; dedupeWindowMs?: number } = {}): TempStore {
  const dir = tempFolder("test");
  const opened: SqliteStore[] = [];
  const open = (): SqliteStore => {
    const s = SqliteStore.open({
      dataDir: path.join(dir, "data"),
      clock: opts.clock,
      dedupeWindowMs: opts.dedupeWindowMs,
    });
    opened.push(s);
    return s;
  };
  const store = open();
  return {
    store,
    dir,
    reopen: open,
    cleanup: () => {
      for (const s of opened) s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A settable clock. */
export function manualClock(
  start = Date.parse("2026-03-02T10:00:00.000Z"),
): Clock & { set(ms: number): void; advance(ms: number): void } {
  let t = start;
  return { now: () => t, set: (ms) => (t = ms), advance: (ms) => (t += ms) };
}

/**
 * The wall clock, stepped forward on demand: time still passes (a poll, a retry, a follow-up come
 * due as usual), and `advance(ms)` is a lease or a grace running out without waiting for it.
 */
export function steppedClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms) => void (offset += ms) };
}

let seq = 0;
/** A small PDF-ish document file in `dir`. */
export function docFile(dir: string, content: string | Buffer = TEST_PDF): string {
  const p = path.join(dir, `doc-${process.pid}-${++seq}.pdf`);
  writeFileSync(p, content);
  return p;
}

export function newJob(dir: string, over: Partial<NewJob> = {}): NewJob {
  return {
    source: "cli",
    user: "alice",
    recipients: [{ number: "+15551230001" }],
    documents: [{ path: docFile(dir), name: "letter.pdf", contentType: "application/pdf" }],
    cover: { enabled: false },
    ...over,
  };
}

/** Job `i` with one document given as bytes (`bytes` + i of them) and no file behind it. */
export function bytesJob(i: number, bytes: number, over: Partial<NewJob> = {}): NewJob {
  return {
    source: "cli",
    user: "alice",
    recipients: [{ number: "+15551234567" }],
    documents: [
      {
        path: `/nowhere/${i}.pdf`,
        name: "letter.pdf",
        contentType: "application/pdf",
        data: Buffer.alloc(bytes + i, 0x25),
      },
    ],
    cover: { enabled: false },
    ...over,
  };
}

let receivedSeq = 0;
/**
 * A received fax as the inbound intake hands it to `store.keepReceived`: a one-page success for
 * alice, received now, a fresh service id, in no group, no text to read; `over` is what a test
 * cares about.
 */
export function receivedInput(over: Partial<NewReceivedFax> = {}): NewReceivedFax {
  return {
    messageId: `svc-${process.pid}-${++receivedSeq}`,
    user: "alice",
    dialled: "+15550100200",
    sender: "+15557654321",
    csid: null,
    pages: 1,
    status: "success",
    receivedAt: new Date().toISOString(),
    groups: [],
    document: TEST_PDF,
    detail: "test",
    ...over,
  };
}

/**
 * A queued job sent, as the dispatcher leaves it (delivered, finished and changed at `at`): what
 * the OCR duty's sweep of sent faxes looks for, without a fax service.
 */
export async function markSent(store: QueueStore, jobId: string, at = new Date().toISOString()): Promise<void> {
  await store.sql.run("UPDATE jobs SET state = 'delivered', finished_at = ?, updated_at = ? WHERE id = ?", [
    at,
    at,
    jobId,
  ]);
}
