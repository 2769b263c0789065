// Pickup for one spool file: claim it by an atomic rename into the user's work folder, read it and
// its ticket safely, hand both to intake's print door (which decides where it goes and queues it),
// and only then move it to done/.
// Every step can be redone after a crash: the claim id in the work name makes the job's
// dedupeKey, so re-queuing a file whose job already exists stores nothing new.
import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import type { Clock } from "../clock.js";
import type { SpoolConfig } from "../config/index.js";
import { describeError, FaxgateError, isFaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import {
  isPrintRefusal,
  PrintDoor,
  type PrintAccepted,
  type PrintFile,
  type PrintRoute,
  type DocumentConverter,
  type InputReaders,
  parseTicket,
  TICKET_MAX_BYTES,
  type QueuePressure,
} from "../intake/index.js";
import type { DestinationCheck } from "../recipients/index.js";
import { sha256Hex } from "../sha256.js";
import { childLog, type Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import type { Ledger } from "../ledger/index.js";
import type { QueueStore } from "../store/index.js";
import { ByteBudget } from "./byte-budget.js";
import type { UserFolders } from "./folders.js";
import { freeName, moveInto, writeReason } from "./outcome-files.js";
import { withFolder, type FolderOptions } from "./safe-folder.js";
import { isTicketName, judgeStat, readSafely } from "./safe-file.js";
import { checkWriter, type Writers } from "./writers.js";

/**
 * "<16 hex>.<original name>": the claim id keeps two drops of one name apart in the work folder.
 * Any byte but "/" may be in a name, a line feed too (`s`: such a file was once never finished).
 */
const WORK_NAME = /^([0-9a-f]{16})\.(.+)$/s;

/**
 * The longest original name (in bytes) kept whole in a work name: 255 less the claim id, its dot,
 * and the ".json" of a ticket, less room for " (99)" and ".reason.txt" in failed/. A longer name
 * (239-255 bytes once hit ENAMETOOLONG at every claim) is shortened, its extension kept.
 */
const NAME_MAX_BYTES = 200;

export interface FileProcessorDeps {
  spool: SpoolConfig;
  store: QueueStore;
  ledger: Ledger;
  clientFor: (user: string) => FaxApi;
  defaultCountryCode: string;
  logger: Logger;
  clock: Clock;
  metrics: Metrics;
  /** queue.maxWaiting (intake's busy answer): a full queue leaves files to be tried again */
  pressure: QueuePressure;
  /** Reads a PDF's text layer (on the daemon's worker threads, with a time limit). */
  readers: InputReaders;
  /** The destination policy, with the gateway's rules and each user's own. */
  destinations: DestinationCheck;
  /** Converts office documents to PDF before they are queued. */
  office: DocumentConverter;
  /** Bytes of files read and not yet queued or refused, at most (default 256 MB). */
  memoryBytes?: number;
}

/** About five files of the largest size a spool takes by default (50 MB). */
const DEFAULT_MEMORY_BYTES = 256 * 1024 * 1024;

export type FileOutcome = "queued" | "duplicate" | "refused" | "retry" | "gone";

interface Seen {
  at: number;
  jobId: string;
  claimId: string;
}

export class FileProcessor {
  /** What was queued per repeat key (intake's print door: owner, content, route, cover), for the dedupe window. */
  private readonly seen = new Map<string, Seen>();
  /** One file of a given content per user at a time, so two copies cannot both pass the window check. */
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly memory: ByteBudget;
  /** intake's door for print files: what a file says and where it goes are decided there */
  private readonly print: PrintDoor;
  /** Who may write each user's files (writers.ts), resolved at start and on reload. */
  private writers = new Map<string, Writers>();

  constructor(private readonly deps: FileProcessorDeps) {
    this.memory = new ByteBudget(deps.memoryBytes ?? DEFAULT_MEMORY_BYTES);
    this.print = new PrintDoor({
      store: deps.store,
      ledger: deps.ledger,
      metrics: deps.metrics,
      pressure: deps.pressure,
      readers: deps.readers,
      office: deps.office,
      clientFor: deps.clientFor,
      defaultCountryCode: deps.defaultCountryCode,
      destinations: deps.destinations,
      faxPrefix: deps.spool.faxPrefix,
    });
  }

  /** The accounts mapped to each user; a user missing here has only faxgate's own files faxed. */
  setWriters(list: Writers[]): void {
    this.writers = new Map(list.map((w) => [w.user, w]));
  }

  private ownerCheck(f: UserFolders): (uid: number) => Promise<void> {
    const w = this.writers.get(f.user) ?? {
      user: f.user,
      self: process.geteuid?.() ?? 0,
      accounts: [],
      source: "default" as const,
      missing: [],
    };
    // the CUPS backend writes each job it authenticated as the owner of the person's folder, which
    // is faxgate's own account in an install as documented, but need not be (only root can chown it)
    return async (uid) => {
      const folderOwner = await f.calls.look(f.root).then((st) => st?.uid);
      return checkWriter(w, uid, folderOwner);
    };
  }

  /** Remembers what the store already holds, so the dedupe window survives a restart. */
  async seedSeen(): Promise<void> {
    const since = this.deps.clock.now() - this.windowMs();
    for (const job of await this.deps.store.listJobs({ source: "spool", limit: 100_000 })) {
      const at = Date.parse(job.createdAt);
      if (at < since) break;
      const key = job.meta.origin?.repeat;
      const claimId = job.meta.origin?.claim;
      if (!key || !claimId) continue;
      if (!this.seen.has(key)) this.seen.set(key, { at, jobId: job.id, claimId });
    }
  }

  private windowMs(): number {
    return this.deps.spool.dedupeWindow;
  }

  /** Claims a stable file by renaming it into the work folder; null if it is gone. */
  async claim(f: UserFolders, name: string): Promise<string | null> {
    const workName = `${randomBytes(8).toString("hex")}.${shortName(name)}`;
    try {
      await withFolder(
        f.work,
        (at) => f.calls.rename(path.join(f.root, name), path.join(at, workName)),
        this.repairs(f),
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    return workName;
  }

  /** A file that cannot even be claimed (not ours to move): its user is told once, with why. */
  async refuseUnclaimable(f: UserFolders, name: string, err: unknown): Promise<void> {
    const st = await f.calls.look(path.join(f.root, name));
    if (!st) return;
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "EACCES" || code === "EPERM"
        ? "faxgate is not allowed to move it (it belongs to another user in a folder that only lets owners move their files)"
        : `faxgate could not move it (${code ?? describeError(err)})`;
    const reason = `${why}; it was left where it is and was not faxed. Remove it, or save it again as the folder's user.`;
    const hash = sha256Hex(`${f.user}\0unclaimable\0${name}\0${st.dev}:${st.ino}`);
    await writeReason(f.failed, shortName(name), reason, this.repairs(f));
    await this.deps.store.enqueueNotification({
      kind: "rejected",
      user: f.user,
      dedupeKey: `rejected:spool:${hash}`,
      payload: { file: name, reason, source: "spool" },
    });
    childLog(this.deps.logger, { user: f.user, file: name }).warn({ reason }, "REJECTED");
    this.count("refused");
  }

  /** This user's folders' calls, and a log line for what withFolder() had to repair in them. */
  private repairs(f: UserFolders): FolderOptions {
    return {
      calls: f.calls,
      onRepair: (what) => this.deps.logger.warn({ user: f.user, repair: what }, "spool folder repaired"),
    };
  }

  /** Names in the work folder left by an earlier run, documents first (tickets travel with them). */
  async leftovers(f: UserFolders): Promise<{ documents: string[]; tickets: string[] }> {
    const names = (await readdir(f.work)).filter((n) => WORK_NAME.test(n));
    return { documents: names.filter((n) => !isTicketName(n)), tickets: names.filter((n) => isTicketName(n)) };
  }

  /** A claimed ticket whose document already reached done/ or failed/ before a crash. */
  async parkOrphanTicket(f: UserFolders, ticketWorkName: string): Promise<void> {
    const m = WORK_NAME.exec(ticketWorkName);
    if (!m) return;
    const docWork = path.join(f.work, ticketWorkName.slice(0, -".json".length));
    if (await f.calls.look(docWork)) return;
    await moveInto(path.join(f.work, ticketWorkName), f.done, m[2]!, { folder: this.repairs(f) });
  }

  /**
   * Processes a claimed file. `knownKeys` (recovery only) are dedupeKeys already in the store:
   * such a file was queued before a crash and only needs to be moved to done/. `freshClaim`: the
   * file was claimed just now, so no ticket of it can be in the work folder yet.
   */
  async process(f: UserFolders, workName: string, knownKeys?: Set<string>, freshClaim = false): Promise<FileOutcome> {
    const { claimId, name } = parseWorkName(workName);
    const workPath = path.join(f.work, workName);
    const log = childLog(this.deps.logger, { user: f.user, file: name });

    const st = await f.calls.look(workPath);
    if (!st) return "gone";
    const verdict = judgeStat(st, this.deps.spool.maxFileBytes);
    if (!verdict.ok) {
      await this.refuseClaimed(f, workName, name, verdict.reason, unreadHash(f, claimId), log);
      return "refused";
    }
    // held from the read until the file's outcome: what a burst of large scans may take at once
    const release = await this.memory.acquire(st.size);
    try {
      return await this.readAndQueue(f, { workName, workPath, claimId, name }, st, log, knownKeys, freshClaim);
    } finally {
      release();
    }
  }

  private async readAndQueue(
    f: UserFolders,
    { workName, workPath, claimId, name }: { workName: string; workPath: string; claimId: string; name: string },
    st: Stats,
    log: Logger,
    knownKeys: Set<string> | undefined,
    freshClaim: boolean,
  ): Promise<FileOutcome> {
    const data = await this.readOrRefuse(f, { workName, workPath, claimId, name }, st, log);
    if (data === null) return "refused";
    const sha = sha256Hex(data);
    const dedupeKey = `spool:${f.user}:${sha.slice(0, 32)}:${claimId}`;
    const refusalHash = sha256Hex(`${f.user}\0${sha}\0${claimId}`);

    if (knownKeys?.has(dedupeKey)) {
      log.info({ dedupeKey }, "recovered a file queued before a restart");
      await this.finishDone(f, workName, name);
      return "queued";
    }

    const ticketResult = await this.readTicket(f, workName, name, freshClaim);
    if (ticketResult && !ticketResult.ok) {
      await this.refuseClaimed(f, workName, name, ticketResult.reason, refusalHash, log);
      return "refused";
    }
    if (ticketResult?.ignoredKeys.length) log.warn({ keys: ticketResult.ignoredKeys }, "ticket keys ignored");

    const file: PrintFile = {
      user: f.user,
      name,
      data,
      sha256: sha,
      ticket: ticketResult?.ticket,
      path: workPath,
      dedupeKey,
      origin: { file: name, claim: claimId, folder: path.basename(f.root) },
    };
    // One file of a given content per user at a time, so two copies cannot both pass the window.
    return this.withLock(`${f.user}\0${sha}`, () =>
      this.queueFile(f, file, { workName, claimId, refusalHash, ticketed: ticketResult !== null }, log),
    );
  }

  /** The claimed file's bytes; null when it was refused because faxgate may not read it. */
  private async readOrRefuse(
    f: UserFolders,
    { workName, workPath, claimId, name }: { workName: string; workPath: string; claimId: string; name: string },
    st: Stats,
    log: Logger,
  ): Promise<Buffer | null> {
    try {
      return await readSafely(workPath, st, this.deps.spool.maxFileBytes, f.calls, this.ownerCheck(f));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Another user's file with mode 0600 (once DEFERRED every 30 s for ever): faxgate may move
      // it but never read it, and waiting will not change that.
      const reason = isFaxgateError(err)
        ? err.message
        : code === "EACCES" || code === "EPERM"
          ? `faxgate is not allowed to read it (it belongs to uid ${st.uid} with mode ${(st.mode & 0o777).toString(8).padStart(4, "0")}); save it so that the fax service's group can read it`
          : null;
      if (reason === null) throw err;
      await this.refuseClaimed(f, workName, name, reason, unreadHash(f, claimId), log);
      return null;
    }
  }

  /**
   * The read file through the print door: queued (and moved to done/), refused or a duplicate
   * (moved to failed/ with its reason), or left in .work/ for the next try when the trouble passes.
   */
  private async queueFile(
    f: UserFolders,
    file: PrintFile,
    {
      workName,
      claimId,
      refusalHash,
      ticketed,
    }: { workName: string; claimId: string; refusalHash: string; ticketed: boolean },
    log: Logger,
  ): Promise<FileOutcome> {
    const { name } = file;
    let queued: PrintAccepted;
    try {
      queued = await this.print.accept(file, { log, vet: (print) => this.notRepeated(print, claimId, log) });
    } catch (err) {
      if (isPrintRefusal(err)) {
        const duplicate = err.code === "REPEATED_FILE";
        await this.refuseClaimed(f, workName, name, err.message, refusalHash, log, duplicate ? "duplicate" : "refused");
        return duplicate ? "duplicate" : "refused";
      }
      if (!isFaxgateError(err)) throw err;
      // a converter without a free slot, a contact lookup that met a network failure: .work/ keeps it
      log.warn({ err: describeError(err) }, "DEFERRED spool file for now; will retry");
      return "retry";
    }
    const now = this.deps.clock.now();
    this.seen.set(queued.repeat, { at: now, jobId: queued.job.id, claimId });
    this.pruneSeen(now);
    await this.finishDone(f, workName, name, ticketed);
    this.count("queued");
    return "queued";
  }

  /**
   * The dedupe window: the same document to the same destination queued moments ago from another
   * claim is not faxed again. Only a true repeat counts (intake's repeat key): the same document to
   * another number, or with another subject, is another fax.
   */
  private notRepeated({ route, repeat }: PrintRoute, claimId: string, log: Logger): void {
    const prior = this.seen.get(repeat);
    if (!prior || prior.claimId === claimId || this.deps.clock.now() - prior.at >= this.windowMs()) return;
    log.info({ job: prior.jobId }, "duplicate of a file queued moments ago; not faxed again");
    const minutes = this.deps.spool.dedupeWindow / 60_000;
    throw new FaxgateError(
      "REPEATED_FILE",
      `not faxed again: the same document to the same destination (${route.recipients.map((r) => r.number).join(", ")}) ` +
        `was queued as fax job ${prior.jobId} less than ${minutes} minutes ago. To send it again on purpose, wait ${minutes} minutes or change its subject.`,
    );
  }

  private async readTicket(
    f: UserFolders,
    workName: string,
    name: string,
    freshClaim: boolean,
  ): Promise<ReturnType<typeof parseTicket> | null> {
    const workTicket = path.join(f.work, `${workName}.json`);
    // A ticket is claimed into the work folder only here: after a fresh claim there is none yet.
    let st = freshClaim ? null : await f.calls.look(workTicket);
    if (!st) {
      // The ticket still sits next to where the document was: claim it too.
      const outside = path.join(f.root, `${name}.json`);
      if (!(await f.calls.look(outside))) return null;
      try {
        await withFolder(f.work, (at) => f.calls.rename(outside, path.join(at, `${workName}.json`)), this.repairs(f));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
        throw err;
      }
      st = await f.calls.look(workTicket);
      // claimed a moment ago: gone from the work folder since, the file waits and is tried again
      if (!st)
        throw new FaxgateError("INTERNAL", `its ticket ${name}.json left the work folder while being taken`, {
          temporary: true,
        });
    }
    const verdict = judgeStat(st, TICKET_MAX_BYTES);
    if (!verdict.ok) return { ok: false, reason: `its ticket ${name}.json was refused: ${verdict.reason}` };
    try {
      const raw = await readSafely(workTicket, st, TICKET_MAX_BYTES, f.calls, this.ownerCheck(f));
      return parseTicket(raw.toString("utf8"));
    } catch (err) {
      return { ok: false, reason: `its ticket ${name}.json could not be read: ${describeError(err)}` };
    }
  }

  /** Refuses a claimed file without reading it (it never stopped changing). */
  async refuseUnread(f: UserFolders, workName: string, reason: string): Promise<void> {
    const { claimId, name } = parseWorkName(workName);
    await this.refuseClaimed(
      f,
      workName,
      name,
      reason,
      unreadHash(f, claimId),
      childLog(this.deps.logger, { user: f.user, file: name }),
    );
  }

  /**
   * Moves a queued (or duplicate) file and its ticket from the work folder to done/. `ticket`:
   * whether this run claimed one (false: nothing to look for; left out: look).
   */
  private async finishDone(f: UserFolders, workName: string, name: string, ticket?: boolean): Promise<void> {
    const now = new Date(this.deps.clock.now());
    // No directory fsync here: the job is already durable, and if a crash forgets this move the
    // file is found in .work/ again, recognised by its dedupeKey and only moved.
    const to = await moveInto(path.join(f.work, workName), f.done, name, {
      sync: false,
      touch: now,
      folder: this.repairs(f),
    });
    if (ticket !== false) await this.moveTicket(f, workName, f.done, path.basename(to));
  }

  private async moveTicket(f: UserFolders, workName: string, dir: string, docName: string): Promise<void> {
    const ticket = path.join(f.work, `${workName}.json`);
    if (await f.calls.look(ticket))
      await moveInto(ticket, dir, `${docName}.json`, { sync: dir !== f.done, folder: this.repairs(f) });
  }

  /** Reason file, notification, then the move: each step can be redone after a crash. */
  private async refuseClaimed(
    f: UserFolders,
    workName: string,
    name: string,
    reason: string,
    hash: string,
    log: Logger,
    outcome = "refused",
  ): Promise<void> {
    // The reason file is named for the free name the document will take in failed/.
    const target = await freeName(f.failed, name, this.repairs(f));
    await this.recordRefusal(f, target, reason, hash, outcome === "duplicate");
    const to = await moveInto(path.join(f.work, workName), f.failed, target, { folder: this.repairs(f) });
    await this.moveTicket(f, workName, f.failed, path.basename(to));
    log.warn({ reason }, "REJECTED");
    this.count(outcome);
  }

  private async recordRefusal(
    f: UserFolders,
    name: string,
    reason: string,
    hash: string,
    repeat = false,
  ): Promise<void> {
    await writeReason(f.failed, name, reason, this.repairs(f));
    await this.deps.store.enqueueNotification({
      kind: "rejected",
      user: f.user,
      dedupeKey: `rejected:spool:${hash}`,
      // a repeat has nothing wrong with it: its mail does not ask to correct anything
      payload: { file: name, reason, source: "spool", ...(repeat ? { nothingToCorrect: true } : {}) },
    });
  }

  private count(outcome: string): void {
    this.deps.metrics.spoolFiles.inc({ outcome });
  }

  private pruneSeen(now: number): void {
    if (this.seen.size < 10_000) return;
    for (const [k, v] of this.seen) if (now - v.at >= this.windowMs()) this.seen.delete(k);
  }

  private async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.locks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    }
  }
}

/** A name of at most NAME_MAX_BYTES bytes: the start and the extension of a longer one. */
export function shortName(name: string): string {
  if (Buffer.byteLength(name) <= NAME_MAX_BYTES) return name;
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 && name.length - dot <= 10 ? name.slice(dot) : "";
  let stem = name.slice(0, name.length - ext.length);
  while (Buffer.byteLength(stem) + Buffer.byteLength(ext) + 3 > NAME_MAX_BYTES) stem = stem.slice(0, -1);
  // A cut through a surrogate pair would leave half a character.
  return `${stem.replace(/[\ud800-\udbff]$/, "")}...${ext}`;
}

function parseWorkName(workName: string): { claimId: string; name: string } {
  const m = WORK_NAME.exec(workName);
  if (!m) throw new FaxgateError("INTERNAL", `not a work file name: ${workName}`);
  return { claimId: m[1]!, name: m[2]! };
}

/** Identifies the refusal of a file refused before its bytes were read (one notice per claim). */
function unreadHash(f: UserFolders, claimId: string): string {
  return sha256Hex(`${f.user}\0${claimId}`);
}
