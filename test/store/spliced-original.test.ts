// An original kept without its documents' base64 (src/store/spliced-original.ts): whatever the
// mail, the original read back is the mail as received, byte for byte; a run is taken out only
// where encoding the document again gives exactly its bytes.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isFaxgateError } from "../../src/errors.js";
import { base64Lines, readWhole, spliceIn, spliceOut } from "../../src/store/spliced-original.js";

/** The reference: Node's base64 cut into lines of `line` characters. */
const lines = (data: Buffer, line: number, eol: string): string =>
  (data.toString("base64").match(new RegExp(`.{1,${line}}`, "g")) ?? []).join(eol);

const mail = (...parts: Array<string | Buffer>): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : p)));

const HEAD =
  "From: a@example.com\r\nTo: 15551230001@fax.example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nPlease fax.\r\n--b\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n";

/** Read back as a store would: each part's document by its file. */
const readBack = (kept: Buffer, parts: Parameters<typeof spliceIn>[1], bytes: number, docs: Record<string, Buffer>) =>
  spliceIn(kept, parts, bytes, async (file) => docs[file]!);

describe("an original kept without its documents' base64", () => {
  it("writes the lines an encoder writes, for every length and line break", () => {
    for (const bytes of [1, 2, 3, 56, 57, 58, 4095, 4096, 4097, 100_000])
      for (const line of [64, 72, 76, 100_000])
        for (const eol of ["\r\n", "\n"]) {
          const data = randomBytes(bytes);
          expect(base64Lines(data, line, eol === "\r\n").toString("latin1")).toBe(lines(data, line, eol));
        }
  });

  it("gives back the mail as received, for each line length, line break and what follows the run", async () => {
    for (const bytes of [4096, 4097, 4098, 57 * 100, 100_000])
      for (const line of [64, 72, 76])
        for (const eol of ["\r\n", "\n"])
          for (const after of [`${eol}--b--${eol}`, "--b--", ""]) {
            const pdf = randomBytes(bytes);
            const raw = mail(HEAD.replaceAll("\r\n", eol), lines(pdf, line, eol), after);
            const cut = spliceOut(raw, [{ file: "01-a.pdf", data: pdf }]);
            expect(cut, `${bytes} bytes, lines of ${line}`).not.toBeNull();
            expect(cut!.kept.length).toBe(raw.length - lines(pdf, line, eol).length);
            expect(cut!.parts).toEqual([
              { at: HEAD.replaceAll("\r\n", eol).length, file: "01-a.pdf", line, crlf: eol === "\r\n" },
            ]);
            expect((await readBack(cut!.kept, cut!.parts, raw.length, { "01-a.pdf": pdf })).equals(raw)).toBe(true);
          }
  });

  it("takes out each of several documents, and the same one attached twice", async () => {
    const [a, b] = [randomBytes(20_000), randomBytes(9_000)];
    const raw = mail(
      HEAD,
      lines(a, 76, "\r\n"),
      "\r\n--b\r\n\r\n",
      lines(b, 76, "\r\n"),
      "\r\n--b\r\n\r\n",
      lines(a, 76, "\r\n"),
      "\r\n--b--\r\n",
    );
    const cut = spliceOut(raw, [
      { file: "01-a.pdf", data: a },
      { file: "02-b.pdf", data: b },
      { file: "03-a.pdf", data: a },
    ]);
    expect(cut!.parts.map((p) => p.file)).toEqual(["01-a.pdf", "02-b.pdf", "03-a.pdf"]);
    expect(cut!.kept.length).toBeLessThan(1_000);
    const docs = { "01-a.pdf": a, "02-b.pdf": b, "03-a.pdf": a };
    expect((await readBack(cut!.kept, cut!.parts, raw.length, docs)).equals(raw)).toBe(true);
  });

  it("keeps the original whole where the lines are not exactly the document encoded again", () => {
    const pdf = randomBytes(10_000);
    const good = lines(pdf, 76, "\r\n");
    const cases: Record<string, string> = {
      "a byte of the document differs": lines(
        Buffer.concat([pdf.subarray(0, 5_000), Buffer.from([pdf[5_000]! ^ 1]), pdf.subarray(5_001)]),
        76,
        "\r\n",
      ),
      "lines of uneven length": good.replace("\r\n", "").replace(/(.{70})/, "$1\r\n"),
      "a line break of its own in the middle": `${good.slice(0, 7_000)}\n${good.slice(7_000)}`,
      "no padding": good.replace(/=+$/, ""),
      "cut short": good.slice(0, -10),
      "base64url letters": lines(pdf, 76, "\r\n").replaceAll("+", "-"),
    };
    for (const [what, body] of Object.entries(cases)) {
      if (body === good) throw new Error(`the case "${what}" did not change the lines`);
      expect(spliceOut(mail(HEAD, body, "\r\n--b--\r\n"), [{ file: "01-a.pdf", data: pdf }]), what).toBeNull();
    }
    const small = randomBytes(4_000);
    expect(spliceOut(mail(HEAD, lines(small, 76, "\r\n")), [{ file: "01-a.pdf", data: small }])).toBeNull();
    expect(spliceOut(mail(HEAD, good), [{ file: "01-a.pdf", data: pdf }])).not.toBeNull();
  });

  it("refuses to hand out other bytes when the parts do not fit", async () => {
    const pdf = randomBytes(10_000);
    const raw = mail(HEAD, lines(pdf, 76, "\r\n"), "\r\n--b--\r\n");
    const cut = spliceOut(raw, [{ file: "01-a.pdf", data: pdf }])!;
    const refused = async (p: Promise<unknown>) =>
      p.then(
        () => "read",
        (err) => (isFaxgateError(err) ? err.code : String(err)),
      );
    const docs = { "01-a.pdf": pdf };
    expect(await refused(readBack(cut.kept, cut.parts, raw.length, docs))).toBe("read");
    expect(await refused(readBack(cut.kept.subarray(1), cut.parts, raw.length, docs))).toBe("STORE_UNAVAILABLE");
    expect(await refused(readBack(cut.kept, cut.parts, raw.length, { "01-a.pdf": pdf.subarray(1) }))).toBe(
      "STORE_UNAVAILABLE",
    );
    expect(await refused(readBack(cut.kept, [{ ...cut.parts[0]!, at: cut.kept.length + 1 }], raw.length, docs))).toBe(
      "STORE_UNAVAILABLE",
    );
  });

  it("reads a store's rows: the kept bytes under their own name, each part by its file", async () => {
    const pdf = randomBytes(10_000);
    const raw = mail(HEAD, lines(pdf, 76, "\r\n"), "\r\n--b--\r\n");
    const cut = spliceOut(raw, [{ file: "01-a.pdf", data: pdf }])!;
    const original = { path: "/data/job-1/original.eml", bytes: raw.length, spliced: cut.parts };
    const asked: string[] = [];
    const rows = (have: Record<string, Buffer>) => async (file: string) => {
      asked.push(file);
      return have[file] ?? null;
    };
    const whole = await readWhole(original, rows({ "original.eml.spliced": cut.kept, "01-a.pdf": pdf }));
    expect(whole?.equals(raw)).toBe(true);
    expect(asked).toEqual(["original.eml.spliced", "01-a.pdf"]);
    // a document with no row is kept as a file: the store reads that instead
    expect(await readWhole({ path: "/data/job-1/01-a.pdf", bytes: pdf.length }, rows({}))).toBeNull();
    // a spliced original whose part is gone is refused, not handed out short
    const err = await readWhole(original, rows({ "original.eml.spliced": cut.kept })).catch((e: unknown) => e);
    expect(isFaxgateError(err) && err.code).toBe("STORE_UNAVAILABLE");
  });
});
