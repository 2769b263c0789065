// Reply sheets end to end on the real tools: the code drawn by qrcode into the PDF page, the page
// turned 2 degrees, "printed" by Ghostscript at fax resolution, speckled and made
// black and white, wrapped as a received picture-only PDF, then found by pdftoppm + zxing-wasm and
// its signature checked. A forged or altered code is found but does not verify.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { degrees, PDFDocument } from "@cantoo/pdf-lib";
import { afterAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { planSandbox } from "../../src/workers/index.js";
import { encodeReplyCode, verifyReplyCode } from "../../src/reply-sheet/reply-code.js";
import { scanForReplyCodes } from "../../src/reply-sheet/reply-decode.js";
import { loadReplyKey, replyKeyMade } from "../../src/reply-sheet/reply-key.js";
import { replySheetPage } from "../../src/reply-sheet/reply-page.js";
import { faxQuality, pictureToPdf, rasterise, typeset } from "../helpers/scanned-fax.js";
import { waitUntil } from "../helpers/wait.js";

/** Whether a `sleep <arg>` runs on this machine (any pid namespace shows in /proc, and a zombie has no command line). */
async function sleeping(arg: string): Promise<boolean> {
  for (const pid of (await readdir("/proc")).filter((d) => /^\d+$/.test(d))) {
    const argv = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
    if (argv[0]?.endsWith("sleep") && argv[1] === arg) return true;
  }
  return false;
}

const TOOLS = ["gs", "pdftoppm"];
const MISSING = TOOLS.filter((t) => findExecutable(t) === null);
if (MISSING.length > 0) console.warn(`reply sheet tests skipped: ${MISSING.join(", ")} not installed`);

const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-reply-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The page turned `degrees` about its centre, as a sheet fed askew: drawn rotated onto a fresh
 * page by pdf-lib, so Ghostscript rasterises the skew. (ImageMagick is not a dependency here:
 * the `convert` on this machine is a PNG-only stand-in.)
 */
async function askew(pdf: Uint8Array, d: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const [embedded] = await doc.embedPdf(pdf, [0]);
  const page = doc.addPage([612, 792]);
  const r = (d * Math.PI) / 180;
  // rotate about the centre: pdf-lib rotates about the drawing origin, so move the origin back
  const [cx, cy] = [306, 396];
  const x = cx - (cx * Math.cos(r) - cy * Math.sin(r));
  const y = cy - (cx * Math.sin(r) + cy * Math.cos(r));
  page.drawPage(embedded!, { x, y, rotate: degrees(d) });
  return doc.save();
}

/** A received fax: a typed first page, then the sheet printed at `dpi`, askew and noisy. */
async function receivedReply(code: string, dpi: [number, number], turn: number, seed: number): Promise<string> {
  const printed = rasterise(await askew(await replySheetPage(code), turn), dpi);
  faxQuality(printed, 0.004, seed);
  const doc = await PDFDocument.create();
  for (const part of [await typeset(["Re: your fax", "Answer below."]), await pictureToPdf(printed)]) {
    const src = await PDFDocument.load(part);
    for (const p of await doc.copyPages(src, src.getPageIndices())) doc.addPage(p);
  }
  const file = path.join(dir, `reply-${dpi.join("x")}-${seed}.pdf`);
  writeFileSync(file, await doc.save());
  return file;
}

describe("reply codes", () => {
  it("verify with their key and with no other", async () => {
    const key = await loadReplyKey({ dataDir: dir });
    const code = encodeReplyCode(key, { jobId: "j_01HZX3", owner: "alice@clinic.example" });
    expect(verifyReplyCode(key, code)).toEqual({ kind: "valid", jobId: "j_01HZX3", owner: "alice@clinic.example" });
    expect(verifyReplyCode(Buffer.alloc(32, 7), code).kind).toBe("forged");
    expect(verifyReplyCode(key, "https://example.com/menu").kind).toBe("foreign");
  });

  it("refuse a code whose owner was changed, its mac kept", async () => {
    const key = await loadReplyKey({ dataDir: dir });
    const code = encodeReplyCode(key, { jobId: "j_1", owner: "alice" });
    const [p, job, , mac] = code.split(".");
    const altered = [p, job, Buffer.from("mallory").toString("base64url"), mac].join(".");
    expect(verifyReplyCode(key, altered)).toEqual({ kind: "forged", why: "signature does not hold" });
  });

  it("name a group that is signed with the rest: changed, dropped or added, it does not verify", async () => {
    const key = await loadReplyKey({ dataDir: dir });
    const code = encodeReplyCode(key, { jobId: "j_2", owner: "alice", group: "referrals" });
    expect(code.startsWith("FG2.")).toBe(true);
    expect(verifyReplyCode(key, code)).toEqual({ kind: "valid", jobId: "j_2", owner: "alice", group: "referrals" });
    const [, job, owner, , mac] = code.split(".");
    const b = (s: string) => Buffer.from(s).toString("base64url");
    // another group's inbox, the mac kept
    expect(verifyReplyCode(key, ["FG2", job, owner, b("legal"), mac].join(".")).kind).toBe("forged");
    // the group dropped: read as an FG1 code, its mac no longer holds
    expect(verifyReplyCode(key, ["FG1", job, owner, mac].join(".")).kind).toBe("forged");
    // a group added to a sheet signed without one
    const plain = encodeReplyCode(key, { jobId: "j_2", owner: "alice" }).split(".");
    expect(verifyReplyCode(key, ["FG2", plain[1], plain[2], b("legal"), plain[3]].join(".")).kind).toBe("forged");
    // a sheet already out (FG1, no group) verifies as before
    expect(verifyReplyCode(key, plain.join("."))).toEqual({ kind: "valid", jobId: "j_2", owner: "alice" });
  });

  it("key is made once in the data folder, 0600, and read back the same", async () => {
    const a = await loadReplyKey({ dataDir: path.join(dir, "k") });
    const b = await loadReplyKey({ dataDir: path.join(dir, "k") });
    expect(a.equals(b)).toBe(true);
    expect(readFileSync(path.join(dir, "k", "reply-sheet.key")).length).toBeGreaterThan(40);
  });

  it("a fleet's gateways agree on the key the shared store keeps; a configured key wins", async () => {
    // the shared store's door as store/sql/kv.ts stateOnce answers it: the first value written
    const kv = new Map<string, string>();
    const shared = async (name: string, value: string) => {
      if (!kv.has(name)) kv.set(name, value);
      return kv.get(name)!;
    };
    // the first gateway ran alone before: its folder's key becomes the fleet's
    const alone = await loadReplyKey({ dataDir: path.join(dir, "k") });
    const one = await loadReplyKey({ dataDir: path.join(dir, "k"), shared });
    const other = await loadReplyKey({ dataDir: path.join(dir, "fresh"), shared });
    expect(one.equals(alone)).toBe(true);
    expect(other.equals(one)).toBe(true);
    const configured = Buffer.alloc(32, 7).toString("base64");
    expect((await loadReplyKey({ dataDir: dir, configured, shared })).equals(Buffer.alloc(32, 7))).toBe(true);
    await expect(loadReplyKey({ dataDir: dir, configured: "c2hvcnQ=" })).rejects.toThrow(
      "replySheets.signingKey must be at least 16 bytes, base64",
    );
  });
});

describe("replySheets.look auto: are reply sheets in use", () => {
  it("not before any key exists; once one is made, configured or kept in the shared store", async () => {
    const fresh = path.join(dir, "in-use");
    const none = async () => null;
    expect(await replyKeyMade({ dataDir: fresh, shared: none })).toBe(false);
    expect(await replyKeyMade({ dataDir: fresh, configured: Buffer.alloc(32, 3).toString("base64") })).toBe(true);
    expect(await replyKeyMade({ dataDir: fresh, shared: async () => "a key" })).toBe(true);
    await loadReplyKey({ dataDir: fresh });
    expect(await replyKeyMade({ dataDir: fresh })).toBe(true);
  });
});

describe.skipIf(MISSING.length > 0)("a reply sheet faxed back", () => {
  const cases: Array<[string, [number, number], number]> = [
    ["standard 200x100 dpi, 2 degrees", [200, 100], 2],
    ["fine 200x200 dpi, -2 degrees", [200, 200], -2],
    // fed the wrong way up: a QR code reads in any orientation, no rotated retries needed
    ["upside down at 200x100 dpi, 182 degrees", [200, 100], 182],
  ];
  for (const [name, dpi, degrees] of cases)
    it(`is found and verifies: ${name}`, async () => {
      const key = await loadReplyKey({ dataDir: dir });
      const code = encodeReplyCode(key, { jobId: "01JD4Z8K7Q3M", owner: "alice@clinic.example" });
      const file = await receivedReply(code, dpi, degrees, 51);
      const scan = await scanForReplyCodes(file, { timeoutMs: 20_000, maxPages: 10 });
      expect(scan).toMatchObject({ kind: "scanned", pages: 2 });
      if (scan.kind !== "scanned") return;
      expect(scan.texts).toEqual([code]);
      expect(verifyReplyCode(key, scan.texts[0]!)).toMatchObject({ kind: "valid", owner: "alice@clinic.example" });
    });

  it("a forged code printed the same way is read but does not verify", async () => {
    const key = await loadReplyKey({ dataDir: dir });
    const forged = encodeReplyCode(Buffer.alloc(32, 1), { jobId: "01JD4Z8K7Q3M", owner: "mallory" });
    const scan = await scanForReplyCodes(await receivedReply(forged, [200, 100], 2, 9), {
      timeoutMs: 20_000,
      maxPages: 10,
    });
    expect(scan.kind).toBe("scanned");
    if (scan.kind !== "scanned") return;
    expect(scan.texts).toEqual([forged]);
    expect(verifyReplyCode(key, scan.texts[0]!)).toEqual({ kind: "forged", why: "signature does not hold" });
  });

  it("a fax that is not a PDF is skipped with its reason", async () => {
    const file = path.join(dir, "not.pdf");
    writeFileSync(file, "hello");
    const scan = await scanForReplyCodes(file, { timeoutMs: 5_000, maxPages: 10 });
    expect(scan).toEqual({ kind: "skipped", why: "pdftoppm exited 1" });
  });

  it("pdftoppm runs in OCR's sandbox and under its time bound", async () => {
    // a stand-in renderer that tries to write beside itself, outside its run's folder
    const fake = path.join(dir, "fake");
    mkdirSync(fake, { recursive: true });
    // as root the sandboxed run is the converter's user (nobody), who must be able to start it
    chmodSync(dir, 0o755);
    const leak = path.join(fake, "leaked.txt");
    const script = path.join(fake, "pdftoppm");
    writeFileSync(script, `#!/bin/sh\necho leaked > ${leak}\nexit 0\n`, { mode: 0o755 });
    const sandboxed = planSandbox({ mode: "auto", command: script });
    const pdf = path.join(dir, "any.pdf");
    writeFileSync(pdf, await typeset(["any page"]));
    if ((await sandboxed).method === "bwrap") {
      expect(
        await scanForReplyCodes(pdf, { pdftoppm: script, timeoutMs: 10_000, maxPages: 1, plan: sandboxed }),
      ).toEqual({ kind: "scanned", texts: [], pages: 0 });
      expect(existsSync(leak)).toBe(false);
    } else console.warn("the sandbox half skipped: bubblewrap cannot run here");
    // the same run without the sandbox does write there: the check above can fail
    await scanForReplyCodes(pdf, {
      pdftoppm: script,
      timeoutMs: 10_000,
      maxPages: 1,
      plan: planSandbox({ mode: "off", command: script }),
    });
    expect(existsSync(leak)).toBe(true);
    // a renderer slower than the bound is killed, with its process group, and the fax skipped:
    // its sleep (a child of the script, named by a length no other process here uses) is gone
    const nap = `300.${process.pid}`;
    writeFileSync(script, `#!/bin/sh\nsleep ${nap}\n`, { mode: 0o755 });
    expect(await scanForReplyCodes(pdf, { pdftoppm: script, timeoutMs: 500, maxPages: 1, plan: sandboxed })).toEqual({
      kind: "skipped",
      why: "timed out rendering pages",
    });
    await waitUntil(async () => !(await sleeping(nap)), "the renderer's sleep killed with its group", 10_000);
  });
});
