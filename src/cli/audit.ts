// `faxgate audit verify|export|anchor` (commands-audit.ts): the ledger read through the same
// SqlLedger the daemon records with, on the queue the config names.
import { appendFileSync, readFileSync } from "node:fs";
import { FaxgateError } from "../errors.js";
import type { LedgerRow } from "../ledger/events.js";
import { type LedgerExportFormat, ledgerExportHeader, ledgerExportLine } from "../ledger/export-format.js";
import { STALE_PENDING_MS } from "../ledger/sealer.js";
import { readingLedger } from "../parts/ledger.js";
import { type GlobalOptions, loadContext, printJson, withStore } from "./context.js";

/** One kept head: `faxgate-ledger-anchor seq=N hash=H at=T taken=T`. */
const ANCHOR = /^faxgate-ledger-anchor seq=(\d+) hash=([0-9a-f]{64}) at=(\S+) taken=(\S+)$/;

export async function auditVerifyCommand(opts: GlobalOptions & { anchor?: string }): Promise<number> {
  const ctx = loadContext(opts);
  const anchors = opts.anchor ? readAnchors(opts.anchor) : [];
  return withStore(ctx, async (store) => {
    const ledger = readingLedger(ctx.config, store, false);
    const result = await ledger.verify();
    let rewritten: string | null = null;
    if (!result.broken)
      for (const a of anchors) {
        const hash = await ledger.hashAt(a.seq);
        if (hash === null) {
          rewritten = `row ${a.seq}, kept by the anchor taken ${a.taken}, is gone (the ledger ends at ${result.head?.seq ?? 0}): rows were deleted from the end`;
          break;
        }
        if (hash !== a.hash) {
          rewritten = `row ${a.seq} is not the row the anchor taken ${a.taken} kept (its hash differs): the ledger was rewritten up to it`;
          break;
        }
      }
    const problem = result.broken ? `row ${result.broken.seq}: ${result.broken.reason}` : rewritten;
    // rows committed but not yet sealed are not broken; left unsealed for long, no sealer runs
    const { count: pending, oldest } = result.pending;
    const staleFor = oldest ? Date.now() - Date.parse(oldest) : 0;
    const stale = pending > 0 && staleFor >= STALE_PENDING_MS;
    const waiting =
      pending > 0
        ? `${pending} rows wait to be sealed into the chain, the oldest since ${oldest}${stale ? ` (over ${STALE_PENDING_MS / 1000} s: is any gateway running, and can it write?)` : ""}`
        : null;
    if (opts.json)
      printJson({
        whole: problem === null,
        rows: result.rows,
        head: result.head,
        anchors: anchors.length,
        ...(result.broken ? { brokenAt: result.broken.seq } : {}),
        ...(problem ? { problem } : {}),
        pending,
        ...(oldest ? { oldestPending: oldest, stalePending: stale } : {}),
      });
    else if (problem) process.stderr.write(`faxgate: the ledger is broken at ${problem}\n`);
    else
      process.stdout.write(
        `the ledger is whole: ${result.rows} rows${result.head ? `, head seq=${result.head.seq} hash=${result.head.hash}` : ""}${anchors.length ? `, ${anchors.length} anchors hold` : ""}\n`,
      );
    if (waiting && !opts.json)
      (stale ? process.stderr : process.stdout).write(`${stale ? "faxgate: " : ""}${waiting}\n`);
    // the contract's exit 0 means the chain is whole; rows waiting unsealed are said, not failed
    // (--json's stalePending is what monitoring reads for a fleet where no gateway seals)
    return problem ? 1 : 0;
  });
}

function readAnchors(file: string): Array<{ seq: number; hash: string; taken: string }> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new FaxgateError("USAGE", `--anchor: cannot read ${file}: ${(err as NodeJS.ErrnoException).code}`);
  }
  const out: Array<{ seq: number; hash: string; taken: string }> = [];
  for (const line of text.split(/\r?\n/)) {
    const m = ANCHOR.exec(line.trim());
    if (m) out.push({ seq: Number(m[1]), hash: m[2]!, taken: m[4]! });
  }
  if (out.length === 0)
    throw new FaxgateError("USAGE", `--anchor: ${file} holds no line written by \`faxgate audit anchor\``);
  return out;
}

export async function auditAnchorCommand(opts: GlobalOptions & { out?: string }): Promise<number> {
  const ctx = loadContext(opts);
  return withStore(ctx, async (store) => {
    const head = await readingLedger(ctx.config, store, false).head();
    if (!head) {
      process.stderr.write("faxgate: the ledger is empty: there is no head to anchor yet\n");
      return 1;
    }
    const line = `faxgate-ledger-anchor seq=${head.seq} hash=${head.hash} at=${head.at} taken=${new Date().toISOString()}`;
    if (opts.out) appendFileSync(opts.out, `${line}\n`);
    process.stdout.write(`${line}\n`);
    return 0;
  });
}

export interface ExportOptions extends GlobalOptions {
  since?: string;
  until?: string;
  user?: string;
  object?: { kind: LedgerRow["object"]["kind"]; id: string };
  number?: string;
  action?: LedgerRow["action"];
  format: LedgerExportFormat;
}

export async function auditExportCommand(opts: ExportOptions): Promise<void> {
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const ledger = readingLedger(ctx.config, store, opts.number !== undefined);
    const out: string[] = [];
    const flush = async () => {
      if (out.length === 0) return;
      const chunk = out.join("");
      out.length = 0;
      if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once("drain", r));
    };
    const header = ledgerExportHeader(opts.format);
    if (header) out.push(header);
    const filter = {
      since: opts.since,
      until: opts.until,
      user: opts.user,
      object: opts.object,
      number: opts.number,
      action: opts.action,
    };
    for await (const r of ledger.all(filter)) {
      out.push(ledgerExportLine(opts.format, r));
      if (out.length >= 500) await flush();
    }
    await flush();
  });
}
