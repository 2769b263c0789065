// Office documents become PDF here with LibreOffice, because the fax service takes only PDF, TIFF,
// PNG, JPEG and text, and before a job is accepted, so a 250 or a queued file means faxable. Every
// intake path calls this one `convert`. A document is untrusted: its outside references are
// stripped (office-strip.ts), the profile hardened (office-profile.ts), and LibreOffice runs in a
// child process group under a time and memory limit, without network (workers/sandboxed-child.ts).
import { randomBytes } from "node:crypto";
import { chmod, chown, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import type { Logger } from "../../log/index.js";
import { findExecutable } from "../../fs/index.js";
import { extensionForType } from "../mail/attachment-policy.js";
import { writeHardenedProfile } from "./office-profile.js";
import {
  killGroup,
  NO_MEMORY_LIMIT,
  planSandbox,
  runSandboxed,
  type SandboxMode,
  type SandboxPlan,
  unreachableBy,
} from "../../workers/index.js";
import { StripError, stripExternalReferences } from "./office-strip.js";
import { WarmInstance } from "./warm-converter.js";
import { WarmPool } from "./warm-pool.js";

/** Office formats by extension, with the words a person knows them by. */
export const OFFICE_FORMATS: Record<string, { label: string; signature: "zip" | "ole" | "rtf" }> = {
  ".docx": { label: "a Word document (.docx)", signature: "zip" },
  ".doc": { label: "a Word 97-2003 document (.doc)", signature: "ole" },
  ".odt": { label: "an OpenDocument text (.odt)", signature: "zip" },
  ".rtf": { label: "an RTF document (.rtf)", signature: "rtf" },
  ".xlsx": { label: "an Excel workbook (.xlsx)", signature: "zip" },
  ".xls": { label: "an Excel 97-2003 workbook (.xls)", signature: "ole" },
  ".ods": { label: "an OpenDocument spreadsheet (.ods)", signature: "zip" },
  ".pptx": { label: "a PowerPoint presentation (.pptx)", signature: "zip" },
  ".ppt": { label: "a PowerPoint 97-2003 presentation (.ppt)", signature: "ole" },
  ".odp": { label: "an OpenDocument presentation (.odp)", signature: "zip" },
};

/** Failed warm starts in a row after which the converter stops trying and converts cold. */
const WARM_START_TRIES = 3;
/** Longest a warm LibreOffice may take to start (a loaded 2-core machine took 20 s). */
const WARM_START_TIMEOUT_MS = 120_000;

const SIGNATURE_TYPE = { zip: "application/zip", ole: "application/x-ole-storage", rtf: "application/rtf" } as const;

/**
 * The office extension of a document, from its name (or declared type) *and* its content: a
 * ".docx" that is not a zip is not an office document. Null for anything else.
 */
export function officeExtension(name: string, sniffed: string | null, declaredType?: string): string | null {
  let ext = path.extname(name).toLowerCase();
  if (!OFFICE_FORMATS[ext]) ext = (declaredType && extensionForType(declaredType)) || "";
  const f = OFFICE_FORMATS[ext];
  if (!f) return null;
  return sniffed === SIGNATURE_TYPE[f.signature] ? ext : null;
}

/** The name a converted document is faxed under: "report.docx" -> "report.pdf". */
export function pdfName(name: string): string {
  const ext = path.extname(name);
  return `${ext ? name.slice(0, -ext.length) : name || "document"}.pdf`;
}

export interface OfficeOptions {
  /** The LibreOffice command (a name looked up in PATH, or a path); false turns conversion off. */
  soffice: string | false;
  /** Longest time one conversion may run; waiting for a free slot is bounded by the same time. */
  timeoutMs: number;
  /** Address-space limit of the converter process, in MiB. */
  memoryMb: number;
  /** Conversions at once. */
  concurrency: number;
  /** Where profiles and work files go (absent: a new folder in the system's temp folder). */
  tmpDir?: string;
  /**
   * Isolation of the converter: 'auto' uses the best this machine allows and warns about the rest,
   * 'required' refuses to convert without bubblewrap's network and file isolation, 'off' none.
   */
  sandbox: SandboxMode;
  /** The user a root daemon runs the converter as (default: faxgate-convert, else nobody). */
  user?: string;
  /** Where removed references are reported (kinds and counts, never the document's content). */
  logger?: Logger;
  /** Each protection can be turned off alone, so that tests can show what each one stops. */
  layers?: { strip?: boolean; profile?: boolean };
  /**
   * Keep LibreOffices started ahead of need once `warmUp()` is called (the daemon does; a
   * one-shot command converts cold). See warm-converter.ts and warm-pool.ts.
   */
  warm: boolean;
  /** Warm LibreOffices kept started and unused, each waiting for a document. */
  warmPool: number;
  /** Documents one warm LibreOffice takes before a fresh one replaces it. */
  restartAfter: number;
}

/** Which protections a conversion runs under, for the start-up log and `faxgate doctor`. */
export interface OfficeProtections {
  summary: SandboxPlan["summary"];
  warnings: string[];
  /** False when office.sandbox is 'required' and bubblewrap's isolation is not available. */
  ok: boolean;
}

export interface ConvertInput {
  /** The document's name as the user gave it (its extension chooses LibreOffice's import filter). */
  name: string;
  /** The office extension found by `officeExtension`. */
  ext: string;
  /** The bytes, or a file to read them from. */
  data?: Uint8Array;
  path?: string;
}

function shuttingDown(): FaxgateError {
  return new FaxgateError("SHUTTING_DOWN", "the gateway is shutting down; the document was not converted", {
    temporary: true,
  });
}

function refuse(message: string): FaxgateError {
  return new FaxgateError("UNSUPPORTED_TYPE", message, { smtpReply: `554 5.6.0 ${message}` });
}

export class OfficeConverter {
  readonly options: OfficeOptions;
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly freeSlots: number[];
  private base: Promise<string> | null = null;
  private plan: Promise<SandboxPlan> | null = null;
  private readonly children = new Set<number>();
  private closed = false;
  /** The warm LibreOffices kept ready, once warmUp() was called; null while converting cold. */
  private pool: WarmPool | null = null;
  /** Warm starts that failed in a row; past WARM_START_TRIES the converter stays cold. */
  private warmFailures = 0;

  /** The options come whole from the config (its schema holds the defaults; main.ts passes them). */
  constructor(options: OfficeOptions) {
    this.options = options;
    this.freeSlots = Array.from({ length: this.options.concurrency }, (_, i) => i);
  }

  /** The converter's path when conversion is on and LibreOffice is installed. */
  available(): string | null {
    return this.options.soffice === false ? null : findExecutable(this.options.soffice);
  }

  /** Why an office document cannot be faxed here, or null when it can be converted. */
  unavailableReason(name: string, ext: string): string | null {
    if (this.available()) return null;
    const what = OFFICE_FORMATS[ext]?.label ?? "an office document";
    return this.options.soffice === false
      ? `${name} is ${what}: office documents cannot be faxed here (conversion is turned off); send it as PDF`
      : `${name} is ${what}: office documents cannot be faxed here (no converter, LibreOffice, is installed on the gateway); send it as PDF`;
  }

  /**
   * Converts one document to PDF and returns the PDF's bytes. A document LibreOffice cannot read
   * or that takes longer than the limit is refused (permanent, 554); waiting too long for a free
   * slot is our own trouble (temporary, 451): the sender's server tries again later.
   */
  async convert(input: ConvertInput): Promise<Buffer> {
    if (this.closed) throw shuttingDown();
    const soffice = this.available();
    const unavailable = this.unavailableReason(input.name, input.ext);
    if (!soffice || unavailable) throw refuse(unavailable ?? `${input.name} cannot be converted`);
    const slot = await this.acquire(Date.now() + this.options.timeoutMs);
    try {
      if (this.pool) {
        const pdf = await this.runWarm(this.pool, input);
        if (pdf) return pdf;
      }
      // the run gets its whole time whatever the wait was: a refusal for slowness is the document's
      return await this.run(soffice, slot, input, Date.now() + this.options.timeoutMs);
    } finally {
      this.release(slot);
    }
  }

  /** Finds out once which isolation this machine allows (bubblewrap, unshare, none). */
  private sandboxPlan(): Promise<SandboxPlan> {
    this.plan ??= planSandbox({ mode: this.options.sandbox, user: this.options.user, command: this.available() });
    return this.plan;
  }

  /** The protections in force: a line each for the start-up log and `faxgate doctor`. */
  async protections(): Promise<OfficeProtections> {
    const plan = await this.sandboxPlan();
    const summary = { ...plan.summary };
    if (this.options.layers?.profile === false) summary.profile = "default (turned off for a test)";
    if (this.options.layers?.strip === false) summary.strip = "off (turned off for a test)";
    return { summary, warnings: plan.warnings, ok: this.options.sandbox !== "required" || plan.method === "bwrap" };
  }

  /**
   * Starts the pool of LibreOffices ahead of need (when `warm` is on and LibreOffice is
   * installed), so that the first documents do not wait for one to start. The daemon calls it.
   */
  warmUp(): void {
    const soffice = this.available();
    if (!this.options.warm || this.closed || !soffice || this.pool) return;
    this.pool = new WarmPool({
      size: this.options.warmPool,
      restartAfter: this.options.restartAfter,
      start: () => this.startWarm(soffice),
    });
    this.pool.fill();
  }

  /**
   * Resolves when every warm LibreOffice of the pool can take a document: true, or false when warm
   * conversion is off or a start failed (for the start-up log, the bench and tests).
   */
  async warmReady(): Promise<boolean> {
    return this.pool ? this.pool.allReady() : false;
  }

  /** Kills conversions still running (shutdown) and removes the profiles. */
  async close(): Promise<void> {
    this.closed = true;
    for (const pid of this.children) killGroup(pid);
    const pool = this.pool;
    this.pool = null;
    await pool?.close();
    const base = this.base;
    this.base = null;
    // a base folder that could not be made (unreachable by the converter's user) has nothing to remove
    const dir = base ? await base.catch(() => null) : null;
    if (dir) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }

  private async acquire(deadline: number): Promise<number> {
    while (this.running >= this.options.concurrency) {
      if (this.closed) throw shuttingDown();
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new FaxgateError("CONVERTER_BUSY", "the document converter is busy; try again later", {
          temporary: true,
          smtpReply: "451 4.3.2 The office document converter is busy, please try again later",
        });
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          const i = this.waiting.indexOf(wake);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve();
        }, left);
        const wake = (): void => {
          clearTimeout(t);
          resolve();
        };
        this.waiting.push(wake);
      });
    }
    if (this.closed) throw shuttingDown();
    this.running += 1;
    return this.freeSlots.shift()!;
  }

  private release(slot: number): void {
    this.running -= 1;
    this.freeSlots.push(slot);
    this.waiting.shift()?.();
  }

  private baseDir(): Promise<string> {
    this.base ??= (async () => {
      const dir = this.options.tmpDir ?? (await mkdtemp(path.join(os.tmpdir(), "faxgate-office-")));
      await mkdir(dir, { recursive: true, mode: 0o700 });
      // a converter of its own user must reach its profile and job folders (whose names are not
      // listable: 0711), and nothing else here
      const runAs = (await this.sandboxPlan()).runAs;
      if (runAs) {
        await chmod(dir, 0o711);
        const why = unreachableBy(dir, runAs);
        if (why) throw new Error(why);
      }
      return dir;
    })();
    return this.base;
  }

  /** The document's bytes with what it names outside itself removed; refused when it cannot be read. */
  private async stripped(input: ConvertInput): Promise<Uint8Array> {
    const data = input.data ?? (input.path ? await readFile(input.path) : null);
    if (!data) throw new Error("convert: no document given");
    if (this.options.layers?.strip === false) return data;
    try {
      const r = stripExternalReferences(data);
      if (r.removed.length > 0) {
        const kinds = new Map<string, number>();
        for (const k of r.removed) kinds.set(k, (kinds.get(k) ?? 0) + 1);
        this.options.logger?.warn(
          { removed: Object.fromEntries(kinds), format: input.ext },
          "office document: external references removed before conversion",
        );
      }
      return r.data;
    } catch (err) {
      if (!(err instanceof StripError)) throw err;
      throw refuse(
        `${input.name} could not be checked for links to outside files (${err.message}), so it is not converted; send it as PDF`,
      );
    }
  }

  /** The sandbox plan, refused when office.sandbox is required and bubblewrap cannot be used. */
  private async isolation(): Promise<SandboxPlan> {
    const plan = await this.sandboxPlan();
    if (this.options.sandbox === "required" && plan.method !== "bwrap") {
      throw new FaxgateError(
        "CONVERTER_UNAVAILABLE",
        "the document converter cannot be isolated on this machine (office.sandbox is required)",
        {
          temporary: true,
          smtpReply: "451 4.3.0 The office document converter is not available, please try again later",
        },
      );
    }
    return plan;
  }

  /** Prepares and starts one warm LibreOffice in its own folder (null: it could not be prepared). */
  private startWarm(soffice: string): Promise<WarmInstance | null> {
    return (async () => {
      const plan = await this.isolation();
      const dir = path.join(await this.baseDir(), `warm-${randomBytes(6).toString("hex")}`);
      return WarmInstance.start({
        soffice,
        plan,
        dir,
        memoryMb: this.options.memoryMb,
        // a start is no document's time: bounded apart from office.timeoutMs
        startTimeoutMs: Math.max(this.options.timeoutMs, WARM_START_TIMEOUT_MS),
        children: this.children,
        profile: this.options.layers?.profile !== false,
      });
    })().catch((err: unknown) => {
      this.options.logger?.warn({ err: String(err) }, "OFFICE warm converter could not be prepared");
      return null;
    });
  }

  /**
   * Converts in a warm LibreOffice of the pool. Null when none could start (the document is then
   * converted cold, so a broken warm start never refuses a document); a document that fails,
   * crashes it or runs out of time is refused as a cold conversion would be, and ends it.
   */
  private async runWarm(pool: WarmPool, input: ConvertInput): Promise<Buffer | null> {
    const data = await this.stripped(input);
    // a LibreOffice still starting (on a busy machine) is waited for, within its own start
    // limit: its start is not the document's time, nor its fault
    const w = await pool.take();
    if (this.closed) {
      if (!(w instanceof Error)) void w.stop();
      throw shuttingDown();
    }
    if (w instanceof Error) {
      this.warmStartFailed(w.message);
      return null;
    }
    this.warmFailures = 0;
    const result = await w.convert(data, input.ext, Date.now() + this.options.timeoutMs);
    if (this.closed) throw shuttingDown();
    const pdf = result.pdf?.subarray(0, 1024).includes("%PDF-") ? result.pdf : null;
    pool.giveBack(w, pdf !== null);
    if (result.timedOut) throw this.tooSlow(input);
    return this.checked(input, pdf, () =>
      result.exited ? "the converter ended while converting it" : lastLine(result.output) || "no PDF was written",
    );
  }

  private warmStartFailed(why: string): void {
    this.warmFailures += 1;
    const off = this.warmFailures >= WARM_START_TRIES;
    this.options.logger?.warn(
      { why, failures: this.warmFailures },
      off
        ? "OFFICE warm converter failed to start repeatedly; documents are converted cold from now on"
        : "OFFICE warm converter failed to start; this document is converted cold",
    );
    if (off) {
      void this.pool?.close();
      this.pool = null;
    }
  }

  private tooSlow(input: ConvertInput): FaxgateError {
    return refuse(
      `${input.name} could not be converted to PDF within ${Math.round(this.options.timeoutMs / 1000)} seconds (too large or too complex); send it as PDF`,
    );
  }

  /** The PDF LibreOffice wrote, or the refusal of the document with LibreOffice's reason. */
  private checked(input: ConvertInput, bytes: Buffer | null, why: () => string): Buffer {
    if (!bytes)
      throw refuse(
        `${input.name} could not be converted to PDF (${why().slice(0, 160)})${componentHint(input.ext)}; send it as PDF`,
      );
    if (!bytes.subarray(0, 1024).includes("%PDF-"))
      throw refuse(`${input.name} could not be converted to PDF; send it as PDF`);
    return bytes;
  }

  private async run(soffice: string, slot: number, input: ConvertInput, deadline: number): Promise<Buffer> {
    const base = await this.baseDir();
    const plan = await this.isolation();
    // One profile per slot: LibreOffice locks its profile, so two conversions never share one.
    const profile = path.join(base, `profile-${slot}`);
    const work = path.join(base, `job-${randomBytes(6).toString("hex")}`);
    await mkdir(work, { recursive: true, mode: 0o700 });
    try {
      const src = path.join(work, `document${input.ext}`);
      await writeFile(src, await this.stripped(input), { mode: 0o600 });
      const out = path.join(work, "out");
      await mkdir(out);
      await mkdir(profile, { recursive: true, mode: 0o700 });
      if (this.options.layers?.profile !== false) await writeHardenedProfile(profile);
      if (plan.runAs) {
        for (const p of [
          work,
          src,
          out,
          profile,
          path.join(profile, "user"),
          path.join(profile, "user", "registrymodifications.xcu"),
        ]) {
          await chown(p, plan.runAs.uid, plan.runAs.gid).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== "ENOENT") throw err;
          });
        }
      }
      const result = await runSandboxed({
        argv: [
          soffice,
          "--headless",
          "--invisible",
          "--norestore",
          "--nolockcheck",
          "--nodefault",
          "--nologo",
          `-env:UserInstallation=file://${profile}`,
          "--convert-to",
          "pdf",
          "--outdir",
          out,
          src,
        ],
        files: [profile, work],
        limits: { timeoutMs: Math.max(1000, deadline - Date.now()), memoryMb: this.options.memoryMb },
        plan,
        env: { SAL_USE_VCLPLUGIN: "svp" },
        children: this.children,
      });
      // killed by close(): our shutdown, not the document's fault (the sender retries)
      if (this.closed) throw shuttingDown();
      if (result.timedOut) {
        // a killed LibreOffice may leave its profile locked or half-written
        await rm(profile, { recursive: true, force: true }).catch(() => undefined);
        throw this.tooSlow(input);
      }
      const pdf = (await readdir(out)).find((n) => n.toLowerCase().endsWith(".pdf"));
      return this.checked(input, pdf ? await readFile(path.join(out, pdf)) : null, () =>
        result.code === NO_MEMORY_LIMIT
          ? "the memory limit could not be set"
          : lastLine(result.output) || `the converter exited with ${result.signal ?? result.code}`,
      );
    } finally {
      await rm(work, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/** Spreadsheets and presentations need their own LibreOffice part, which a minimal install lacks. */
function componentHint(ext: string): string {
  if ([".xlsx", ".xls", ".ods"].includes(ext))
    return " (spreadsheets need LibreOffice Calc, e.g. the libreoffice-calc-nogui package)";
  if ([".pptx", ".ppt", ".odp"].includes(ext))
    return " (presentations need LibreOffice Impress, e.g. the libreoffice-impress-nogui package)";
  return "";
}

function lastLine(s: string): string {
  const lines = s
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !/javaldx|java may not/.test(l));
  return lines.at(-1) ?? "";
}
