// Operator commands on the queue: jobs, job, retry|cancel|hold|release, status (send is in send.ts).
import os from "node:os";
import { smtpSettings } from "../config/schema.js";
import { createLedger } from "../parts/ledger.js";
import { FaxgateError } from "../errors.js";
import { configuredConsoleUrl } from "../config/console-url.js";
import { restartNoteKey, type RestartNote } from "../config/restart-needed.js";
import { faxNumber, hostTimeZone, localTime, localTimesIn, pages, size } from "../format.js";
import { inFlightByNumber, jobJson, needsNumber, recipientTries, waitReason } from "../job-json.js";
import { waitsForAddress } from "../store/job-state.js";
import { JOB_STATES, type Job, type JobState, type RecipientState } from "../store/types.js";
import { loadContext, printJson, printTable, withClients, withStore, type GlobalOptions } from "./context.js";
import { listKeyHolds } from "../keys/key-holds.js";

export { jobJson, recipientTries };

export async function jobsCommand(
  opts: GlobalOptions & { state?: string; user?: string; limit?: number },
): Promise<void> {
  const limit = opts.limit ?? 200;
  const ctx = loadContext(opts);
  const tz = hostTimeZone();
  await withStore(ctx, async (store) => {
    const state = opts.state;
    let jobs: Job[];
    if (state === undefined || (JOB_STATES as readonly string[]).includes(state)) {
      jobs = await store.listJobs({ state: state as JobState | undefined, user: opts.user, limit });
    } else {
      // A recipient's state (deferred, sending, processing, unknown): the jobs with such a recipient.
      jobs = (await store.listJobs({ user: opts.user, limit: 100_000 }))
        .filter((j) => j.recipients.some((r) => r.state === (state as RecipientState)))
        .slice(0, limit);
    }
    const inFlight = inFlightByNumber(await store.listJobs({ state: "active", limit: 100_000 }));
    const now = Date.now();
    const url = configuredConsoleUrl(ctx.config.web);
    if (opts.json) return printJson(jobs.map((j) => jobJson(j, inFlight, now, url)));
    if (jobs.length === 0) return void process.stdout.write("no jobs\n");
    printTable(
      ["JOB", "STATE", "SOURCE", "USER", "CREATED", "RECIPIENTS"],
      jobs.map((j) => [
        j.id,
        waitsForAddress(j) ? "needs a number" : j.state,
        j.source,
        j.user,
        localTime(j.createdAt, tz) ?? j.createdAt,
        j.recipients
          .map((r) => {
            const why = localTimesIn(waitReason(j, r, now, inFlight, url), tz);
            // a print waiting for its number has none yet, and is not "held" for release
            if (waitsForAddress(j)) return why;
            return `${faxNumber(r.number)} ${r.state}${why ? ` (${why})` : ""}`;
          })
          .join(", "),
      ]),
    );
  });
}

export async function jobCommand(id: string, opts: GlobalOptions): Promise<void> {
  const ctx = loadContext(opts);
  const tz = hostTimeZone();
  const url = configuredConsoleUrl(ctx.config.web);
  const at = (iso: string) => localTime(iso, tz) ?? iso;
  await withStore(ctx, async (store) => {
    const job = await store.getJob(id);
    if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job ${id}`);
    const inFlight = inFlightByNumber(await store.listJobs({ state: "active", limit: 100_000 }));
    const now = Date.now();
    if (opts.json) return printJson(jobJson(job, inFlight, now, url));
    const waiting = waitsForAddress(job);
    const out = [
      `job       ${job.id}`,
      `state     ${waiting ? localTimesIn(waitReason(job, job.recipients[0]!, now, inFlight, url), tz) : job.state}`,
      `source    ${job.source} (user ${job.user})`,
      `created   ${at(job.createdAt)}${job.finishedAt ? `, finished ${at(job.finishedAt)}` : ""}`,
      job.scheduledAt ? `scheduled ${at(job.scheduledAt)}` : "",
      `cover     ${job.cover.enabled ? `yes${job.cover.subject ? `, subject "${job.cover.subject}"` : ""}` : "no"}`,
      `documents ${job.documents.map((d) => `${d.name} (${size(d.bytes)})`).join(", ") || "(none)"}`,
      ...(job.meta.leftOut ?? []).map((l) => `left out  ${l.name}: ${l.reason}`),
      job.corruptReason ? `corrupt   ${job.corruptReason}` : "",
      waiting ? "" : "recipients:",
      ...(waiting ? [] : job.recipients).map((r) => {
        // a deferred recipient's "next try" is on the line already
        const reason = localTimesIn(waitReason(job, r, now, inFlight, url), tz);
        const why = reason?.startsWith("next try") ? null : reason;
        return (
          `  ${(faxNumber(r.number) ?? "").padEnd(18)} ${r.state.padEnd(10)} tries ${recipientTries(r)}` +
          `${r.messageId ? `  message ${r.messageId}` : ""}${r.pages != null ? `  ${pages(r.pages)}` : ""}` +
          `${r.errorInfo || r.lastError ? `  (${r.errorInfo ?? r.lastError})` : ""}${r.nextAttemptAt && r.state === "deferred" ? `  next try ${at(r.nextAttemptAt)}` : ""}` +
          `${why ? `  waiting: ${why}` : ""}`
        );
      }),
    ];
    process.stdout.write(`${out.filter(Boolean).join("\n")}\n`);
  });
}

/** The ledger's word for each operation on a job. */
const CLI_OP_ACTION = { cancel: "cancelled", hold: "held", release: "released", retry: "resent" } as const;

export async function jobOpCommand(
  op: "retry" | "cancel" | "hold" | "release",
  id: string,
  opts: GlobalOptions,
): Promise<void> {
  const ctx = loadContext(opts);
  await withStore(ctx, async (store) => {
    const before = await store.getJob(id);
    // its placeholder is "held" in the store, but nothing can send it before it has a number
    if (before && waitsForAddress(before) && op !== "cancel")
      throw new FaxgateError(
        "JOB_STATE",
        `job ${id} ${needsNumber(before, configuredConsoleUrl(ctx.config.web))} (${op} does not apply)`,
      );
    const job = await store.operate(id, op);
    // by the account that ran the command: the CLI has no sign-in of its own
    await createLedger(ctx.config, store).record({
      action: CLI_OP_ACTION[op],
      actor: { kind: "operator", id: os.userInfo().username },
      object: { kind: "job", id: job.id },
      door: "cli",
    });
    if (opts.json) return printJson(jobJson(job));
    process.stdout.write(`${job.id}: ${job.state}\n`);
  });
}

export async function statusCommand(opts: GlobalOptions): Promise<number> {
  const ctx = loadContext(opts);
  const counts = await withStore(ctx, (store) => store.counts());
  const noteText = await withStore(ctx, (store) => store.getState(restartNoteKey()));
  const restartNeeded: RestartNote | null = noteText ? (JSON.parse(noteText) as RestartNote) : null;
  const keysHeld = await withStore(ctx, (store) =>
    listKeyHolds(
      store,
      ctx.config.users.map((u) => u.name),
    ),
  );
  let api: { ok: boolean; detail?: string };
  try {
    await withClients(ctx, async (c) => {
      await c.forUser().ping();
    });
    api = { ok: true };
  } catch (err) {
    api = { ok: false, detail: (err as Error).message };
  }
  const report = {
    jobs: counts.jobs,
    recipients: counts.recipients,
    oldestActiveAgeSeconds: counts.oldestActiveAgeSeconds,
    notificationsPending: counts.notificationsPending,
    api,
    keysHeld,
    restartNeeded,
  };
  if (opts.json) printJson(report);
  else {
    const nonzero = (o: Record<string, number>) =>
      Object.entries(o)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${k} ${n}`)
        .join(", ") || "none";
    process.stdout.write(
      `${[
        `jobs:          ${nonzero(counts.jobs)}`,
        `recipients:    ${nonzero(counts.recipients)}`,
        `oldest active: ${counts.oldestActiveAgeSeconds === null ? "-" : `${Math.round(counts.oldestActiveAgeSeconds)} s`}`,
        `notifications: ${counts.notificationsPending} pending`,
        `fax service:   ${api.ok ? "reachable" : `NOT reachable: ${api.detail}`}`,
        ...(restartNeeded
          ? [
              `RESTART NEEDED: ${restartNeeded.settings.join(", ")} changed by a reload at ${localTime(restartNeeded.at, hostTimeZone())}; the daemon still runs with the old value until it is restarted`,
            ]
          : []),
        ...keysHeld.map(
          (h) => `KEY REFUSED:   ${h.user} since ${h.since}: faxes held until a working key is loaded (${h.reason})`,
        ),
      ].join("\n")}\n`,
    );
  }
  return api.ok && keysHeld.length === 0 ? 0 : 1;
}

/** `faxgate report <job>`: the job's transmission report (PDF) to stdout or --out FILE. */
export async function reportCommand(id: string, opts: GlobalOptions & { out?: string; tz?: string }): Promise<void> {
  const ctx = loadContext(opts);
  if (!opts.out && process.stdout.isTTY)
    throw new FaxgateError("USAGE", "the report is a PDF: give --out FILE, or redirect stdout to a file");
  const { jobReport } = await import("../notify/job-report.js");
  const { effectiveUsers } = await import("../keys/key-overrides.js");
  const { writeFileAtomic } = await import("../fs/atomic.js");
  await withStore(ctx, async (store) => {
    const job = await store.getJob(id);
    if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job ${id}`);
    const user = effectiveUsers(ctx.config.users, ctx.config.data).find((u) => u.name === job.user);
    // the account's time zone comes from the service; without it (--tz, or the service not
    // reachable) the report says which zone it used instead
    const me = opts.tz || !user ? null : await withClients(ctx, (c) => c.forUser(user.name).me()).catch(() => null);
    const pdf = await jobReport({
      store,
      job,
      user,
      me,
      fallbackTimeZone: opts.tz ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
      now: new Date(),
      defaultCountryCode: smtpSettings(ctx.config).defaultCountryCode,
    });
    if (opts.out) {
      await writeFileAtomic(opts.out, pdf);
      process.stderr.write(`transmission report of job ${job.id} written to ${opts.out}\n`);
    } else {
      await new Promise<void>((resolve, reject) => process.stdout.write(pdf, (err) => (err ? reject(err) : resolve())));
    }
  });
}
