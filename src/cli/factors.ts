// `faxgate factors list|reset <person>` (commands-factors.ts): the console's sign-in factors in the
// queue the config names; a reset is recorded in the ledger (the operator who ran it, door cli).
import os from "node:os";
import { FaxgateError } from "../errors.js";
import { createLedger } from "../parts/ledger.js";
import { SignInFactors } from "../store/index.js";
import { type CliContext, type GlobalOptions, loadContext, printJson, withStore } from "./context.js";

function person(ctx: CliContext, name: string): string {
  if (!ctx.config.users.some((u) => u.name === name))
    throw new FaxgateError("USAGE", `no configured user is named ${JSON.stringify(name)}`);
  return name;
}

export async function factorsListCommand(name: string, opts: GlobalOptions): Promise<void> {
  const ctx = loadContext(opts);
  const user = person(ctx, name);
  await withStore(ctx, async (store) => {
    const list = (await new SignInFactors(store.sql).of(user)).map((f) => ({
      id: f.id,
      kind: f.kind,
      name: f.name,
      createdAt: f.createdAt,
      usedAt: f.usedAt,
    }));
    if (opts.json) return printJson(list);
    if (list.length === 0) return void process.stdout.write(`${user} has no factor enrolled\n`);
    for (const f of list)
      process.stdout.write(
        `${f.kind.padEnd(8)} ${f.name.padEnd(24)} added ${f.createdAt}  last used ${f.usedAt ?? "never"}\n`,
      );
  });
}

export async function factorsResetCommand(name: string, opts: GlobalOptions & { by?: string }): Promise<void> {
  const ctx = loadContext(opts);
  const user = person(ctx, name);
  await withStore(ctx, async (store) => {
    const removed = await new SignInFactors(store.sql).reset(user);
    await createLedger(ctx.config, store).record({
      action: "factor-reset",
      actor: { kind: "operator", id: opts.by ?? os.userInfo().username },
      object: { kind: "person", id: user },
      door: "cli",
      detail: { removed },
    });
    if (opts.json) printJson({ person: user, removed });
    else process.stdout.write(`removed ${removed} factor${removed === 1 ? "" : "s"} of ${user}\n`);
  });
}
