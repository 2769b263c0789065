// `faxgate send` with an office document, as an operator types it: converted to PDF before it is
// queued, or refused up front saying why (the same words as mail and the print folder).
import { copyFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { runCli } from "../helpers/cli.js";
import { tempFolder } from "../tmp-dir.js";

const HAVE_SOFFICE = findExecutable("soffice") !== null;
if (!HAVE_SOFFICE)
  console.warn(
    "send-office: soffice (LibreOffice) is not installed; the conversion test skips (apt-get install libreoffice-writer-nogui)",
  );

let dir: string;
let docx: string;
beforeAll(() => {
  dir = tempFolder("send-office");
  docx = path.join(dir, "report.docx");
  copyFileSync(path.join(import.meta.dirname, "..", "fixtures", "office", "hello.docx"), docx);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(name: string, office: string): string {
  const f = path.join(dir, name);
  writeFileSync(
    f,
    `api:\n  baseUrl: https://fax.example.test\ndata: ${path.join(dir, name, "..", `${name}.data`)}\n${office}users:\n  - name: alice\n    email: alice@example.com\n    apiKey: alice-key\n`,
  );
  return f;
}

describe("faxgate send with an office document", () => {
  it("refuses it up front, naming the file, its type and that no converter is installed", async () => {
    const f = config("off.yaml", "office:\n  soffice: /nonexistent/soffice\n");
    const r = await runCli(["send", "--config", f, "--to", "+15551234567", docx]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/report\.docx is a Word document \(\.docx\).*no converter, LibreOffice, is installed/);
    expect(r.stdout).not.toMatch(/queued as/);
  });

  it.skipIf(!HAVE_SOFFICE)(
    "converts it and queues the PDF",
    async () => {
      const f = config("on.yaml", "");
      SqliteStore.open({ dataDir: path.join(dir, "on.yaml.data") }).close(); // the queue a started gateway leaves
      const r = await runCli(["send", "--config", f, "--to", "+15551234567", docx], { timeoutMs: 90_000 });
      expect(r.code, r.stderr).toBe(0);
      const id = /queued as (\S+)/.exec(r.stdout)![1]!;
      const store = SqliteStore.open({ dataDir: path.join(dir, "on.yaml.data") });
      try {
        const job = (await store.getJob(id))!;
        expect(job.documents.map((d) => [d.name, d.contentType])).toEqual([["report.pdf", "application/pdf"]]);
        expect((await store.readDocument(job.documents[0]!)).subarray(0, 5).toString()).toBe("%PDF-");
      } finally {
        store.close();
      }
    },
    120_000,
  );
});
