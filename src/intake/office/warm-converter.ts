// A LibreOffice started ahead of need, so that a document waits for its conversion and not for
// LibreOffice to start (issue 54: 1.4 s of a .docx mail's 1.5 s was the start). Its bench row is
// bench/office-convert.bench.ts. One instance is one sandbox (the same bubblewrap, memory limit
// and hardened profile as a cold conversion) holding a LibreOffice kept alive by a blank document
// of ours and warmed by converting it once. Each document is then handed to it through
// LibreOffice's own front door, a second `soffice --convert-to` in the same sandbox, which passes
// its arguments to the running instance and returns when the PDF is written. The instance takes at
// most `restartAfter` documents (default 1: every document meets a LibreOffice no other document
// has touched) and is replaced at once; a document that fails, crashes it or runs out of time
// ends the instance too, so the next one always gets a fresh one.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chown, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { strToU8, zipSync } from "fflate";
import { writeHardenedProfile } from "./office-profile.js";
import { groupGone, killGroup, type SandboxPlan, spawnSandboxed } from "../../workers/index.js";

/**
 * The supervisor inside the sandbox: starts LibreOffice with the blank document open (with no
 * document open it would quit after its first conversion), waits for its single-instance pipe (in
 * the sandbox's own /tmp) and for the blank document to be open, converts the blank document once,
 * says "ready", then converts one job folder per line read and answers "done <job> <status>".
 * Exit 3: LibreOffice ended while starting; 4: the blank document would not convert. A client
 * started before the pipe exists
 * would become a LibreOffice of its own, hence the wait; and when LibreOffice ends, so does the
 * supervisor (a client left alone would convert the document by itself, outside any bound). When
 * the daemon is gone (its end of stdin closed, even by SIGKILL) the whole group goes with it; while
 * it starts, before it reads stdin, spawnSandboxed's watcher does that.
 */
const SUPERVISOR = `S=$1; P=$2; W=$3
o() { "$S" --headless --invisible --norestore --nolockcheck --nodefault --nologo "-env:UserInstallation=$P" "$@"; }
( o "$W/keep/blank.docx" >"$W/server.log" 2>&1 </dev/null; kill $$ ) &
srv=$!
while :; do
  for f in /tmp/OSL_PIPE_*SingleOfficeIPC*; do [ -e "$f" ] && break 2; done
  kill -0 $srv 2>/dev/null || exit 3
  sleep 0.02
done
# and for its document to be open: a conversion that ends while LibreOffice has no document open
# yet ends LibreOffice with it (it quits with its last document), which a busy machine hit often
while ! ls -l /proc/[0-9]*/fd/ 2>/dev/null | grep -qF "$W/keep/blank.docx"; do
  kill -0 $srv 2>/dev/null || exit 3
  sleep 0.05
done
# the pipe's file exists a moment before it listens: a client refused then gives up, so try again
for try in 1 2 3; do
  o --convert-to pdf --outdir "$W/warm/out" "$W/warm/blank.docx" >"$W/warm/log" 2>&1 </dev/null
  [ -f "$W/warm/out/blank.pdf" ] && break
  kill -0 $srv 2>/dev/null || exit 3
  sleep 0.5
done
[ -f "$W/warm/out/blank.pdf" ] || exit 4
rm -rf "$W/warm"
echo ready
while read -r job file; do
  o --convert-to pdf --outdir "$W/$job/out" "$W/$job/$file" >"$W/$job/log" 2>&1 </dev/null
  echo "done $job $?"
done
kill -KILL 0`;

/** The supervisor's own exits while starting, said in the start-up warning. */
const STARTS_ENDED: Record<number, string> = {
  3: "LibreOffice ended before it was ready",
  4: "the warm-up conversion wrote no PDF",
  143: "LibreOffice ended before it was ready",
};

/** A one-paragraph .docx of our own: Writer and the OOXML import are loaded by it before any document. */
function blankDocx(): Uint8Array {
  const w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
  return zipSync({
    "[Content_Types].xml": strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    ),
    "_rels/.rels": strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
    ),
    "word/document.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="${w}"><w:body><w:p><w:r><w:t>.</w:t></w:r></w:p></w:body></w:document>`,
    ),
  });
}

export interface WarmStart {
  soffice: string;
  plan: SandboxPlan;
  /** The instance's own folder (profile, job folders); removed with it. */
  dir: string;
  memoryMb: number;
  /** Longest the start may take before the instance is given up. */
  startTimeoutMs: number;
  /** Pids of process groups to kill at shutdown (the converter's own set). */
  children: Set<number>;
  /** Harden the profile (false only for a test that shows what the profile stops). */
  profile: boolean;
}

export interface WarmResult {
  /** The PDF's bytes, when LibreOffice wrote one. */
  pdf: Buffer | null;
  timedOut: boolean;
  /** The instance ended (crashed, killed) before it answered. */
  exited: boolean;
  /** LibreOffice's last words for this document (never the document's content). */
  output: string;
}

export class WarmInstance {
  /** Documents handed to this instance so far. */
  used = 0;
  /** Resolves when the instance can take a document; rejects with why it could not start. */
  readonly ready: Promise<void>;
  private readonly pid: number | undefined;
  private readonly lines: string[] = [];
  private readonly waiters: Array<() => void> = [];
  private ended = false;
  private exitCode: number | null = null;
  private gone: Promise<void>;

  private readonly child: ChildProcess;

  private constructor(private readonly o: WarmStart) {
    const profile = path.join(o.dir, "profile");
    const work = path.join(o.dir, "work");
    const child = spawnSandboxed({
      argv: ["/bin/sh", "-c", SUPERVISOR, "supervisor", o.soffice, `file://${profile}`, work],
      program: o.soffice,
      files: [profile, work],
      memoryMb: o.memoryMb,
      plan: o.plan,
      // the instance's caches (fontconfig) stay with its profile, not where documents are put
      env: { HOME: profile, SAL_USE_VCLPLUGIN: "svp" },
      children: o.children,
      stdio: ["pipe", "pipe", "ignore"],
    });
    this.child = child;
    this.pid = child.pid;
    child.stdin?.on("error", () => undefined);
    createInterface({ input: child.stdout! }).on("line", (line) => this.heard(line));
    this.gone = new Promise((resolve) => {
      child.on("error", () => resolve());
      child.on("close", (code, signal) => {
        // the supervisor ends itself with SIGTERM when LibreOffice ends (143 through bwrap)
        this.exitCode = code ?? (signal === "SIGTERM" ? 143 : null);
        resolve();
      });
    });
    void this.gone.then(() => {
      this.ended = true;
      this.wake();
    });
    this.ready = this.untilLine((l) => l === "ready", o.startTimeoutMs).then((line) => {
      if (line !== "ready")
        throw new Error(
          this.ended
            ? `it ended while starting (${STARTS_ENDED[this.exitCode ?? -1] ?? `exit ${this.exitCode}`})`
            : "it did not start in time",
        );
    });
    // a start nobody waits for yet must not be an unhandled rejection
    this.ready.catch(() => undefined);
  }

  /** Prepares the instance's folders and starts it in its sandbox. */
  static async start(o: WarmStart): Promise<WarmInstance> {
    const profile = path.join(o.dir, "profile");
    const work = path.join(o.dir, "work");
    const blank = blankDocx();
    for (const d of [o.dir, profile, work, path.join(work, "keep"), path.join(work, "warm")])
      await mkdir(d, { recursive: true, mode: 0o700 });
    await writeFile(path.join(work, "keep", "blank.docx"), blank, { mode: 0o600 });
    await writeFile(path.join(work, "warm", "blank.docx"), blank, { mode: 0o600 });
    if (o.profile) await writeHardenedProfile(profile);
    if (o.plan.runAs) {
      const { uid, gid } = o.plan.runAs;
      for (const p of [
        o.dir,
        profile,
        work,
        path.join(work, "keep"),
        path.join(work, "keep", "blank.docx"),
        path.join(work, "warm"),
        path.join(work, "warm", "blank.docx"),
        path.join(profile, "user"),
        path.join(profile, "user", "registrymodifications.xcu"),
      ])
        await chown(p, uid, gid).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== "ENOENT") throw err;
        });
    }
    return new WarmInstance(o);
  }

  /** True while the instance runs. */
  get alive(): boolean {
    return !this.ended;
  }

  /**
   * Converts one document (already stripped) in this instance. The job folder is the document's
   * alone and is removed afterwards, whatever happened; the caller ends the instance unless the
   * result was a PDF.
   */
  async convert(doc: Uint8Array, ext: string, deadline: number): Promise<WarmResult> {
    this.used += 1;
    const job = `job-${randomBytes(6).toString("hex")}`;
    const folder = path.join(this.o.dir, "work", job);
    const file = `document${ext}`;
    await mkdir(path.join(folder, "out"), { recursive: true, mode: 0o700 });
    try {
      await writeFile(path.join(folder, file), doc, { mode: 0o600 });
      if (this.o.plan.runAs) {
        const { uid, gid } = this.o.plan.runAs;
        for (const p of [folder, path.join(folder, "out"), path.join(folder, file)]) await chown(p, uid, gid);
      }
      this.child.stdin?.write(`${job} ${file}\n`);
      const line = await this.untilLine((l) => l.startsWith(`done ${job} `), deadline - Date.now());
      const output = await readFile(path.join(folder, "log"), "utf8").catch(() => "");
      if (line === null) return { pdf: null, timedOut: !this.ended, exited: this.ended, output };
      const pdf = await readFile(path.join(folder, "out", "document.pdf")).catch(() => null);
      return { pdf, timedOut: false, exited: false, output };
    } finally {
      await rm(folder, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** Ends the instance, whole, and removes its folder (profile and whatever a document left). */
  async stop(): Promise<void> {
    if (this.pid) killGroup(this.pid);
    await this.gone;
    // the supervisor's end is seen before a LibreOffice that was reading the disk has died
    if (this.pid) await groupGone(this.pid);
    await rm(this.o.dir, { recursive: true, force: true }).catch(() => undefined);
  }

  private heard(line: string): void {
    this.lines.push(line);
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The first line heard that `match`es (lines before it are dropped); null at the end or the time limit. */
  private untilLine(match: (line: string) => boolean, timeoutMs: number): Promise<string | null> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(null), Math.max(0, timeoutMs));
      const finish = (v: string | null): void => {
        clearTimeout(timer);
        const i = this.waiters.indexOf(check);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(v);
      };
      const check = (): void => {
        while (this.lines.length > 0) {
          const l = this.lines.shift()!;
          if (match(l)) return finish(l);
        }
        if (this.ended) return finish(null);
        this.waiters.push(check);
      };
      check();
    });
  }
}
