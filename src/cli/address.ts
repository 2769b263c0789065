// `faxgate address <job> <number...>`: gives a print waiting for its number (print now, address
// later) its destination from the command line, through the same checks as the console's address
// page (intake/address-waiting.ts). Only the job's owner's rules apply: their destination policy
// and their contacts.
import { smtpSettings } from "../config/schema.js";
import { FaxgateError } from "../errors.js";
import { faxNumber } from "../format.js";
import { addressWaiting } from "../intake/address-waiting.js";
import { destinationPolicy } from "../recipients/recipients.js";
import { jobJson } from "../job-json.js";
import os from "node:os";
import { recipientEvents } from "../ledger/index.js";
import { createLedger } from "../parts/ledger.js";
import { effectiveUsers } from "../keys/key-overrides.js";
import { loadContext, printJson, withClients, withStore, type GlobalOptions } from "./context.js";

export interface AddressOptions extends GlobalOptions {
  subject?: string;
  notes?: string;
  cover?: boolean;
}

export async function addressCommand(id: string, to: string[], opts: AddressOptions): Promise<void> {
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const job = await store.getJob(id);
    if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job ${id}`);
    const user = effectiveUsers(ctx.config.users, ctx.config.data).find((u) => u.name === job.user);
    if (!user) throw new FaxgateError("USAGE", `job ${id} belongs to "${job.user}", who is no longer configured`);
    const after = await withClients(ctx, (clients) =>
      addressWaiting(
        {
          store,
          destinations: destinationPolicy(
            () => ctx.config.destinations,
            () => [user],
          ),
          defaultCountryCode: smtpSettings(ctx.config).defaultCountryCode,
          // a contact's name is looked up with the owner's key, only when one is given
          contacts: { listContacts: (q) => clients.forUser(user.name).listContacts(q) },
        },
        job,
        { to, subject: opts.subject, notes: opts.notes, cover: opts.cover, label: (t) => `"${t}"` },
      ),
    );
    // by the account that ran the command: the CLI has no sign-in of its own
    await createLedger(ctx.config, store).recordAll(
      recipientEvents("addressed", after, { actor: { kind: "operator", id: os.userInfo().username }, door: "cli" }),
    );
    if (opts.json) return printJson(jobJson(after));
    const numbers = after.recipients.map((r) => (r.name ? `${r.name} (${faxNumber(r.number)})` : faxNumber(r.number)));
    process.stdout.write(`${after.id}: ${after.state}, to ${numbers.join(", ")}\n`);
  });
}
