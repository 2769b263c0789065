// `faxgate deliveries [list]|again` (commands-deliveries.ts) on the queue the config names.
import os from "node:os";
import { FaxgateError } from "../errors.js";
import { deliverAgain, type DeliveryState, listDeliveries } from "../store/sql/deliveries.js";
import { type GlobalOptions, loadContext, printJson, withStore } from "./context.js";

const STATES: readonly DeliveryState[] = ["pending", "delivering", "delivered", "failed"];

export async function deliveriesListCommand(
  opts: GlobalOptions & { state?: string; received?: string },
): Promise<void> {
  if (opts.state !== undefined && !STATES.includes(opts.state as DeliveryState))
    throw new FaxgateError("USAGE", `--state must be one of ${STATES.join(", ")}`);
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const list = await listDeliveries(store.sql, {
      ...(opts.state ? { state: opts.state as DeliveryState } : {}),
      ...(opts.received ? { faxId: opts.received } : {}),
    });
    // the spec is config, shown by `faxgate config show`; the row says where and how it went
    const rows = list.map(({ spec: _spec, ...r }) => r);
    if (opts.json) return printJson(rows);
    if (rows.length === 0) return void process.stdout.write("no deliveries\n");
    for (const r of rows)
      process.stdout.write(
        `${r.id}  ${r.state.padEnd(10)} ${r.faxId}  ${r.target}  tries ${r.attempts}${r.lastError ? `  ${r.lastError}` : ""}\n`,
      );
  });
}

export async function deliverAgainCommand(id: string, opts: GlobalOptions & { by?: string }): Promise<void> {
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const row = await deliverAgain(store.sql, id, opts.by ?? os.userInfo().username);
    if (!row) throw new FaxgateError("USAGE", `no failed or pending delivery ${id} (faxgate deliveries list)`);
    if (opts.json) printJson({ ...row, spec: undefined });
    else process.stdout.write(`${row.id}: to be delivered again to ${row.target}\n`);
  });
}
