// The CUPS backend run exactly as cupsd runs it: argv job-id user title copies options [file],
// DEVICE_URI in the environment, the document on stdin when no file is given; AUTH_USERNAME is the
// user cupsd authenticated (as it sets it for a queue with faxgate's CUPS policy) unless a test
// says otherwise.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseTicket } from "../../src/intake/print/ticket.js";
import { spoolHarness } from "../spool/harness.js";
import { waitUntil } from "../helpers/wait.js";
import { BACKEND } from "./private-cupsd.js";
import { tempFolder } from "../tmp-dir.js";

const PDF = "%PDF-1.4\n% printed\n%%EOF\n";

let dir: string;
let root: string;
beforeEach(() => {
  dir = tempFolder("test");
  root = path.join(dir, "spool");
  mkdirSync(path.join(root, "alice"), { recursive: true });
  writeFileSync(path.join(dir, "job.pdf"), PDF);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function backend(args: string[], opts: { input?: string; env?: Record<string, string> } = {}) {
  const r = spawnSync("/bin/sh", [BACKEND, ...args], {
    input: opts.input,
    env: {
      PATH: "/usr/bin:/bin",
      DEVICE_URI: `faxgate:${root}`,
      AUTH_INFO_REQUIRED: "none",
      ...(args[1] ? { AUTH_USERNAME: args[1] } : {}),
      ...opts.env,
    },
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const userFiles = (u = "alice") => readdirSync(path.join(root, u)).sort();

describe("faxgate CUPS backend", () => {
  it("prints its discovery line when run without arguments", () => {
    const r = backend([]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('direct faxgate:/var/spool/faxgate "faxgate" "Print to fax (faxgate)"');
  });

  it("writes the document and its ticket into the printing user's folder", () => {
    // cupsd escapes spaces, quotes and backslashes in values with a backslash.
    const r = backend([
      "42",
      "alice",
      "Invoice 42",
      "1",
      'fax-number=+15551234567,5557654321 fax-to-name=Acme\\ Billing fax-notes=Please\\ call\\ \\"back\\" fax-cover=on job-uuid=urn:uuid:1',
      path.join(dir, "job.pdf"),
    ]);
    expect(r.stderr).not.toMatch(/ERROR/);
    expect(r.code).toBe(0);
    expect(userFiles()).toEqual(["cups-42 Invoice 42.pdf", "cups-42 Invoice 42.pdf.json"]);
    expect(readFileSync(path.join(root, "alice", "cups-42 Invoice 42.pdf"), "utf8")).toBe(PDF);
    const t = parseTicket(readFileSync(path.join(root, "alice", "cups-42 Invoice 42.pdf.json"), "utf8"));
    expect(t).toMatchObject({ ok: true, ignoredKeys: [] });
    if (!t.ok) return;
    expect(t.ticket).toMatchObject({
      to: ["+15551234567", "5557654321"],
      recipientName: "Acme Billing",
      subject: "Invoice 42",
      notes: 'Please call "back"',
      cover: true,
      copies: 1,
    });
  });

  it("a link planted under the name it will write is replaced, never written through; no predictable temp name", () => {
    const outside = path.join(dir, "outside.txt");
    writeFileSync(outside, "untouched");
    symlinkSync(outside, path.join(root, "alice", "cups-9 T.pdf"));
    symlinkSync(outside, path.join(root, "alice", "cups-9 T.pdf.json"));
    // the old temp names (".$name.$$.tmp") can no longer be guessed: plant a few anyway
    for (let pid = 1; pid < 50; pid++) symlinkSync(outside, path.join(root, "alice", `.cups-9 T.pdf.${pid}.tmp`));
    const r = backend(["9", "alice", "T", "1", "fax-number=5551234567", path.join(dir, "job.pdf")]);
    expect(r.code).toBe(0);
    expect(readFileSync(outside, "utf8")).toBe("untouched");
    expect(lstatSync(path.join(root, "alice", "cups-9 T.pdf")).isFile()).toBe(true);
    expect(readFileSync(path.join(root, "alice", "cups-9 T.pdf"), "utf8")).toBe(PDF);
  });

  it('fax option words split off by lp cancel the job with how to quote (never a fax to "Acme")', () => {
    const r = backend([
      "10",
      "alice",
      "T",
      "1",
      "Billing fax-number=5551234567 fax-to-name=Acme",
      path.join(dir, "job.pdf"),
    ]);
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/words without a name \(Billing\).*lp -o 'fax-to-name="Acme Billing"'/);
    expect(userFiles()).toEqual([]);
  });

  it("reads the document from stdin and escapes hostile titles into valid JSON", () => {
    const r = backend(
      ["7", "alice", 'smbprn.00000012 Microsoft Word - Q3 "final" \\ ../../etc', "2", "fax-number=5551234567"],
      { input: PDF },
    );
    expect(r.code).toBe(0);
    const names = userFiles();
    expect(names).toHaveLength(2);
    const doc = names.find((n) => n.endsWith(".pdf"))!;
    expect(doc).not.toContain("/");
    expect(readFileSync(path.join(root, "alice", doc), "utf8")).toBe(PDF);
    const t = parseTicket(readFileSync(path.join(root, "alice", `${doc}.json`), "utf8"));
    expect(t.ok && t.ticket.subject).toBe('Q3 "final" \\ ../../etc');
    expect(t.ok && t.ticket.copies).toBe(2);
  });

  it("cancels the job (exit 5, not 4 which stops the queue) for a user without a folder", () => {
    const r = backend(["8", "mallory", "x", "1", "fax-number=5551234567", path.join(dir, "job.pdf")]);
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/^ERROR: faxgate: user "mallory" has no fax folder/m);
    for (const bad of ["../alice", ".", "a/b", ""]) {
      expect(backend(["9", bad, "x", "1", "", path.join(dir, "job.pdf")]).code).toBe(5);
    }
    expect(userFiles()).toEqual([]);
  });

  it("cancels a job CUPS did not authenticate, local or not, and writes nothing", () => {
    const job = (env: Record<string, string>, options = "job-originating-host-name=localhost") =>
      backend(["20", "alice", "t", "1", `fax-number=+15551234567 ${options}`, path.join(dir, "job.pdf")], { env });
    for (const [env, options] of [
      [{ AUTH_USERNAME: "" }, undefined], // a local lp -U alice on a queue with the stock policy
      [{ AUTH_USERNAME: "bob" }, undefined], // authenticated as someone else
      [{ AUTH_USERNAME: "" }, "job-originating-host-name=192.0.2.7"],
      [{ AUTH_INFO_REQUIRED: "username,password" }, undefined], // auth-info names any user
    ] as const) {
      const r = job(env, options);
      expect(r.code).toBe(5);
      expect(r.stderr).toMatch(
        /was not authenticated, so "alice" is only the name the client sent.*printer-op-policy=faxgate/,
      );
    }
    expect(job({ AUTH_USERNAME: "" }).stderr).toMatch(/job from this host \(a local lp\)/);
    expect(userFiles()).toEqual([]);
  });

  it("refuses a user folder that is a symlink", () => {
    mkdirSync(path.join(dir, "elsewhere"));
    symlinkSync(path.join(dir, "elsewhere"), path.join(root, "eve"));
    const r = backend(["10", "eve", "x", "1", "", path.join(dir, "job.pdf")]);
    expect(r.code).toBe(5);
    expect(readdirSync(path.join(dir, "elsewhere"))).toEqual([]);
  });

  it("takes the spool root from FAXGATE_SPOOL_ROOT when the URI has none; cancels an empty job", () => {
    expect(
      backend(["11", "alice", "t", "1", "", path.join(dir, "job.pdf")], {
        env: { DEVICE_URI: "faxgate:", FAXGATE_SPOOL_ROOT: root },
      }).code,
    ).toBe(0);
    expect(backend(["12", "alice", "t", "1", ""], { input: "" }).code).toBe(5);
    expect(userFiles()).toEqual(["cups-11 t.pdf", "cups-11 t.pdf.json"]);
  });

  it("what it writes is faxed by the spool watcher", async () => {
    const h = await spoolHarness({ users: [{ name: "alice", email: "alice@example.com", aliases: [], apiKey: "k" }] });
    try {
      const r = backend(["13", "alice", "Quarterly", "1", "fax-number=+15551234567", path.join(dir, "job.pdf")], {
        env: { DEVICE_URI: `faxgate:${h.root}` },
      });
      expect(r.code).toBe(0);
      const job = await waitUntil(async () => (await h.jobs())[0], "a job", 8000);
      expect(job.recipients.map((x) => x.number)).toEqual(["+15551234567"]);
      expect(job.cover.subject).toBe("Quarterly");
      expect(job.meta.origin).toMatchObject({ via: "ticket", file: "cups-13 Quarterly.pdf" });
    } finally {
      await h.close();
    }
  });
});
