// `faxgate send`: a fax from files on this machine, through the same accept step as mail and print.
// Its own module, so that `faxgate jobs` and the other queue commands don't load the PDF and
// office-document code.
import { smtpSettings } from "../config/schema.js";
import { createLedger } from "../parts/ledger.js";
import { officeOptions } from "../parts/converters.js";
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../errors.js";
import { destinationPolicy } from "../recipients/recipients.js";
import { formatFaxNumber } from "../recipients/fax-number.js";
import { acceptForm, newFaxDocuments, newFaxRecipients } from "../intake/new-fax.js";
import { OfficeConverter } from "../intake/office/office-convert.js";
import { QueuePressure } from "../intake/queue-pressure.js";
import { systemClock } from "../clock.js";
import { jobJson } from "../job-json.js";
import { silentLogger } from "../log/logger.js";
import type { QueueStore } from "../store/queue-store.js";
import { FINAL_JOB_STATES } from "../store/transitions.js";
import type { LeftOut, NewDocument } from "../store/types.js";
import { loadContext, pickUser, printJson, withStore, type GlobalOptions } from "./context.js";

export interface SendOptions extends GlobalOptions {
  to: string[];
  cover?: boolean;
  subject?: string;
  notes?: string;
  user?: string;
  wait?: boolean;
}

export async function sendCommand(files: string[], opts: SendOptions): Promise<number> {
  const ctx = loadContext(opts);
  const user = pickUser(ctx, opts.user);
  const recipients = await newFaxRecipients({
    to: opts.to,
    user: user.name,
    defaultCountryCode: smtpSettings(ctx.config).defaultCountryCode,
    destinations: destinationPolicy(
      () => ctx.config.destinations,
      () => [user],
    ),
    label: (t) => `--to ${t}`,
  });
  if (recipients.length === 0) throw new FaxgateError("USAGE", "give at least one --to NUMBER");
  for (const f of files) {
    if (!existsSync(f) || !statSync(f).isFile()) throw new FaxgateError("USAGE", `${f}: no such file`);
  }
  // office documents are converted to PDF here, as mail and print-folder files are
  let converter: OfficeConverter | null = null;
  let documents: NewDocument[];
  let leftOut: LeftOut[];
  try {
    const byPath = new Map(files.map((f) => [path.resolve(f), f]));
    ({ documents, leftOut } = await newFaxDocuments(
      files.map((f) => ({ path: path.resolve(f), name: path.basename(f) })),
      () => (converter ??= new OfficeConverter(officeOptions(ctx.config.office))),
      (u) => byPath.get(u.path) ?? u.name,
      undefined,
      ctx.config.intake.partial,
    ));
  } finally {
    await (converter as OfficeConverter | null)?.close();
  }
  // intake.partial: send; said before anything else, as the outcome mail and the console do
  if (leftOut.length)
    process.stderr.write(`faxgate send: sending without ${leftOut.map((l) => `${l.name} (${l.reason})`).join("; ")}\n`);
  const cover = opts.cover === true || documents.length === 0;
  if (documents.length === 0 && !opts.subject && !opts.notes && opts.cover !== true) {
    throw new FaxgateError("NOTHING_TO_FAX", "nothing to fax: give a file, or --cover with --subject/--notes");
  }
  return withStore(ctx, async (store) => {
    // the same accept step as mail and print (stdout carries only the command's own answer)
    const { job } = await acceptForm(
      // a full queue answers "busy" here as at every door (QUEUE_FULL, exit code of a temporary error)
      {
        store,
        ledger: createLedger(ctx.config, store),
        log: silentLogger(),
        pressure: new QueuePressure(store, ctx.config.queue.maxWaiting, systemClock),
      },
      {
        source: "cli",
        user: user.name,
        recipients,
        documents,
        cover: { enabled: cover, subject: opts.subject, notes: opts.notes },
        origin: { command: "faxgate send" },
        leftOut,
      },
    );
    process.stdout.write(opts.json && !opts.wait ? `${JSON.stringify(jobJson(job))}\n` : `queued as ${job.id}\n`);
    return opts.wait ? waitForJob(store, job.id, opts) : 0;
  });
}

/** Shows each change of the job's recipients until it is final; exit code 0 only if delivered. */
async function waitForJob(store: QueueStore, id: string, opts: SendOptions): Promise<number> {
  let last = "";
  for (;;) {
    const job = await store.getJob(id);
    if (!job) throw new FaxgateError("JOB_NOT_FOUND", `job ${id} disappeared from the queue`);
    const line = job.recipients
      .map((r) => `${formatFaxNumber(r.number)} ${r.state}${r.errorInfo ? ` (${r.errorInfo})` : ""}`)
      .join(", ");
    if (line !== last) {
      process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${job.id} ${job.state}: ${line}\n`);
      last = line;
    }
    if ((FINAL_JOB_STATES as readonly string[]).includes(job.state)) {
      if (opts.json) printJson(jobJson(job));
      return job.state === "delivered" ? 0 : 1;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}
