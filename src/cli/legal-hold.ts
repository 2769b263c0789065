// `faxgate legal-hold add|list|release` (commands-legal-hold.ts): legal holds on the queue the
// config names, each change with its ledger row (the operator who ran it, door cli).
import os from "node:os";
import { FaxgateError } from "../errors.js";
import { createLedger } from "../parts/ledger.js";
import { LegalHolds, shownHoldValue } from "../retention/legal-holds.js";
import type { HoldKind } from "../store/sql/retention.js";
import { type GlobalOptions, loadContext, printJson, withStore } from "./context.js";

export interface HoldAddOptions extends GlobalOptions {
  user?: string;
  number?: string;
  job?: string;
  received?: string;
  matter?: string;
  reason?: string;
  by?: string;
}

const operator = (by?: string): string => by ?? os.userInfo().username;

const shown = shownHoldValue;

export async function holdAddCommand(opts: HoldAddOptions): Promise<void> {
  const given = (["user", "number", "job", "received", "matter"] as const).filter((k) => opts[k] !== undefined);
  if (given.length !== 1)
    throw new FaxgateError("USAGE", "name exactly one of --user, --number, --job, --received, --matter");
  const kind: HoldKind = given[0]!;
  if (!opts.reason) throw new FaxgateError("USAGE", "a legal hold needs --reason");
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const holds = new LegalHolds({ store, ledger: createLedger(ctx.config, store) });
    const h = await holds.add({ kind, value: opts[kind]!, reason: opts.reason!, by: operator(opts.by), door: "cli" });
    if (opts.json) printJson(h);
    else process.stdout.write(`${h.id}: ${h.kind} ${shown(h)} held (${h.reason})\n`);
  });
}

export async function holdListCommand(opts: GlobalOptions & { all?: boolean }): Promise<void> {
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const list = await new LegalHolds({ store, ledger: createLedger(ctx.config, store) }).list(opts.all);
    if (opts.json) return printJson(list);
    if (list.length === 0) return void process.stdout.write("no legal holds\n");
    for (const h of list)
      process.stdout.write(
        `${h.id}  ${h.kind.padEnd(8)} ${shown(h).padEnd(24)} by ${h.heldBy} ${h.heldAt}${h.releasedAt ? ` released ${h.releasedAt} by ${h.releasedBy}` : ""}  ${h.reason}\n`,
      );
  });
}

export async function holdReleaseCommand(
  id: string,
  opts: GlobalOptions & { by?: string; reason?: string },
): Promise<void> {
  if (!opts.reason) throw new FaxgateError("USAGE", "releasing a legal hold needs --reason");
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const holds = new LegalHolds({ store, ledger: createLedger(ctx.config, store) });
    const h = await holds.release(id, { by: operator(opts.by), reason: opts.reason!, door: "cli" });
    if (opts.json) printJson(h);
    else process.stdout.write(`${h.id} released: what it held follows the retention rule again\n`);
  });
}
