// A small mail and its parts are held in memory and handed to the store as bytes; past a file's
// bound (SMALL_DOCUMENT_BYTES) or the message's (MESSAGE_HOLD_BYTES) they go to files in the
// message's work folder, which is made only then (src/intake/mail/incoming-file.ts). Real folders,
// real streams, the real parser.
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { MESSAGE_HOLD_BYTES, WorkDir, keptSha256, writeIncoming } from "../../src/intake/mail/incoming-file.js";
import { HeldMemory } from "../../src/intake/mail/held-memory.js";
import { startMailParse, type ExtractedPart } from "../../src/intake/mail/mail-parse.js";
import { SMALL_DOCUMENT_BYTES } from "../../src/store/types.js";

const root = mkdtempSync(path.join(os.tmpdir(), "held-"));
// one door's held memory, as the mail door keeps it: reused from one message to the next
const memory = new HeldMemory();
afterAll(() => rmSync(root, { recursive: true, force: true }));

const filler = (size: number, seed: number): Buffer => {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 13 + seed * 101) & 0xff;
  return Buffer.concat([Buffer.from("%PDF-1.4\n"), b]);
};
const b64 = (data: Buffer): string => (data.toString("base64").match(/.{1,76}/g) ?? []).join("\r\n");

function message(docs: Buffer[]): Buffer {
  const parts = docs.map((d, i) =>
    [
      `--B`,
      `Content-Type: application/pdf; name="d${i}.pdf"`,
      `Content-Disposition: attachment; filename="d${i}.pdf"`,
      `Content-Transfer-Encoding: base64`,
      "",
      b64(d),
    ].join("\r\n"),
  );
  return Buffer.from(
    [
      `From: a@example.com`,
      `Subject: held`,
      `MIME-Version: 1.0`,
      `Content-Type: multipart/mixed; boundary="B"`,
      "",
      ...parts,
      `--B--`,
      "",
    ].join("\r\n"),
    "latin1",
  );
}

/** The message received as the SMTP receiver takes it: kept and parsed in one pass, in chunks of 64 KB. */
async function receive(
  bytes: Buffer,
): Promise<{ dir: WorkDir; kept: Awaited<ReturnType<typeof writeIncoming>>; parts: ExtractedPart[] }> {
  const dir = WorkDir.forMessage(path.join(root, "incoming"), memory);
  const parse = startMailParse(dir);
  const chunks: Buffer[] = [];
  for (let o = 0; o < bytes.length; o += 65536) chunks.push(bytes.subarray(o, o + 65536));
  const kept = await writeIncoming(Readable.from(chunks), dir, 50 * 1024 * 1024, parse.input);
  const parsed = await parse.done;
  expect(parsed, "the one-pass parse").not.toBeNull();
  return { dir, kept, parts: parsed!.parts };
}

const content = (p: ExtractedPart): Buffer => p.data ?? readFileSync(p.path);

describe("a message held in memory while it is small", () => {
  it("makes no file or folder: the message and its attachment are bytes", async () => {
    const doc = filler(73_000, 1);
    const bytes = message([doc]);
    const { dir, kept, parts } = await receive(bytes);
    expect(kept.data?.equals(bytes)).toBe(true);
    // the duplicate check's hash of mail without a Message-ID, taken from the held bytes
    expect(await keptSha256(kept)).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(parts).toHaveLength(1);
    expect(parts[0]!.data?.equals(doc)).toBe(true);
    expect(existsSync(dir.path), "the work folder").toBe(false);
    await dir.remove();
  });

  it("writes a part past a file's bound to its file: what was held first, then the rest", async () => {
    const small = filler(20_000, 2);
    const big = filler(SMALL_DOCUMENT_BYTES + 5_000, 3);
    const bytes = message([small, big]);
    const { dir, kept, parts } = await receive(bytes);
    // the message itself is past the bound: a file
    expect(kept.data).toBeNull();
    expect(readFileSync(kept.path).length).toBe(kept.bytes);
    // ...which the duplicate check's hash is taken from
    expect(await keptSha256(kept)).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(parts.map((p) => p.data !== undefined)).toEqual([true, false]);
    expect(content(parts[0]!).equals(small)).toBe(true);
    expect(readFileSync(parts[1]!.path).equals(big)).toBe(true);
    await dir.remove();
    expect(existsSync(dir.path)).toBe(false);
  });

  it("holds at most MESSAGE_HOLD_BYTES of one message's parts; the next go to files", async () => {
    const each = Math.floor(SMALL_DOCUMENT_BYTES * 0.8);
    const docs = [1, 2, 3, 4].map((s) => filler(each, s));
    const { dir, parts } = await receive(message(docs));
    const held = parts.filter((p) => p.data !== undefined);
    // each held part takes a buffer of SMALL_DOCUMENT_BYTES (held memory comes in sizes that double)
    expect(held.length).toBe(MESSAGE_HOLD_BYTES / SMALL_DOCUMENT_BYTES);
    expect(held.reduce((n, p) => n + p.data!.length, 0)).toBeLessThanOrEqual(MESSAGE_HOLD_BYTES);
    expect(parts.length - held.length).toBeGreaterThan(0);
    for (const [i, p] of parts.entries()) expect(content(p).equals(docs[i]!), `part ${i}`).toBe(true);
    await dir.remove();
  });

  it("gives its memory back when a file it holds is destroyed, and when its message is done", async () => {
    const dir = new WorkDir(path.join(root, "destroyed"), 32 * 1024, memory);
    const end = (f: ReturnType<WorkDir["file"]>, b: Buffer): Promise<void> =>
      new Promise((resolve, reject) => f.end(b, (err?: Error | null) => (err ? reject(err) : resolve())));
    const a = dir.file("a", false);
    // 20 KB held take a buffer of 32 KB: all this message may hold
    a.write(Buffer.alloc(20_000, 1));
    a.destroy();
    await new Promise((r) => a.once("close", r));
    const b = dir.file("b", false);
    await end(b, Buffer.alloc(30_000, 2));
    expect(b.data()?.equals(Buffer.alloc(30_000, 2))).toBe(true);
    // and with b holding it all, the next file goes to disk
    const c = dir.file("c", false);
    await end(c, Buffer.alloc(10, 3));
    expect(c.data()).toBeNull();
    expect(readFileSync(c.path).equals(Buffer.alloc(10, 3))).toBe(true);
    await dir.remove();
    // the held bytes were views of memory that the next messages reuse: not to be read any more
    expect(() => b.data()).toThrow(/the message is done/);
    expect(existsSync(dir.path)).toBe(false);
  });

  it("reuses a done message's memory for the next one without any of its bytes showing", async () => {
    const first = filler(150_000, 7);
    const a = await receive(message([first]));
    expect(a.parts[0]!.data?.equals(first)).toBe(true);
    await a.dir.remove();
    // a smaller mail next: its buffers are the first mail's, of which it must show nothing
    const second = Buffer.from("%PDF-1.4\nsecond\n");
    const bytes = message([second]);
    const b = await receive(bytes);
    expect(b.kept.data?.equals(bytes)).toBe(true);
    expect(b.parts[0]!.data?.equals(second)).toBe(true);
    await b.dir.remove();
  });

  it("opens no file for one destroyed while its folder is being made", async () => {
    const dir = new WorkDir(path.join(root, "gone"), 0, memory);
    const f = dir.file("message.eml", false);
    f.on("error", () => undefined);
    // nothing may be held: this write makes the folder, then would open the file
    f.write(Buffer.from("x"));
    f.destroy();
    await dir.ready();
    // fixed wait on purpose: negative check: the file never appears
    await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(dir.path), "the folder").toBe(true);
    expect(existsSync(f.path), "the file").toBe(false);
    await dir.remove();
  });

  it("names the folder it could not make", async () => {
    // a file where the incoming folder should be: the folder for the message cannot be made
    const blocked = path.join(root, "blocked");
    await import("node:fs/promises").then((f) => f.writeFile(blocked, "x"));
    const dir = new WorkDir(path.join(blocked, "msg"), 0, memory);
    const f = dir.file("message.eml", false);
    const failed = new Promise<Error>((resolve) => f.once("error", resolve));
    f.write(Buffer.from("x"));
    const err = await failed;
    expect(err.message).toContain(`cannot write to ${blocked}`);
    expect((err as { temporary?: boolean }).temporary).toBe(true);
  });

  it("lends scratch bytes within the message's share, and takes them back at remove()", async () => {
    const mem = new HeldMemory();
    const dir = new WorkDir(path.join(root, "scratch"), MESSAGE_HOLD_BYTES, mem);
    const page = dir.scratch(100_000)!;
    expect(page.length).toBe(100_000);
    page.fill(7);
    // the rest of the share: one more of the biggest size fits, then nothing does
    expect(dir.scratch(SMALL_DOCUMENT_BYTES)).not.toBeNull();
    expect(dir.scratch(SMALL_DOCUMENT_BYTES), "past the message's share").toBeNull();
    expect(dir.scratch(SMALL_DOCUMENT_BYTES + 1), "past a file's bound").toBeNull();
    await dir.remove();
    // given back: the next message's scratch of that size is the same memory, not a new buffer
    const next = new WorkDir(path.join(root, "scratch2"), MESSAGE_HOLD_BYTES, mem).scratch(90_000)!;
    expect(next.buffer).toBe(page.buffer);
  });
});
