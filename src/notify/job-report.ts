// The transmission report of a stored job, with what the report needs gathered from the config
// user, the service's record of the user (time zone, caller id) and the store's documents. Shared
// by the outcome mail, the console's download and `faxgate report`.
import type { UserConfig } from "../config/index.js";
import type { User } from "../fax/index.js";
import type { QueueStore, Job } from "../store/index.js";
import { renderTransmissionReport } from "./transmission-report.js";

export type ReportMode = "off" | "always" | "failed";

/** Whether an outcome mail carries the report: the user's own switch, else the gateway's. */
export function wantsReport(
  job: Job,
  user: Pick<UserConfig, "report"> | undefined,
  gateway: ReportMode | undefined,
): boolean {
  const mode = user?.report ?? gateway ?? "off";
  if (mode === "off" || job.state === "corrupt" || job.recipients.length === 0) return false;
  return mode === "always" || job.recipients.some((r) => r.state !== "delivered");
}

export function reportFileName(job: Job): string {
  return `transmission-report-${job.id}.pdf`;
}

export async function jobReport(opts: {
  store: Pick<QueueStore, "readDocument">;
  job: Job;
  user: UserConfig | undefined;
  /** The user's record at the service, when it could be read. */
  me?: User | null;
  /** Used when the service's record gives none (the system's zone at the command line). */
  fallbackTimeZone?: string;
  now: Date;
  /** False where the fax may not leave (notify/what-leaves.ts): the box says so instead. */
  pageImage?: boolean;
  /** smtp.defaultCountryCode, for a caller id kept without its country code */
  defaultCountryCode?: string;
}): Promise<Uint8Array> {
  const { job, me } = opts;
  return renderTransmissionReport({
    job,
    timeZone: me?.account?.timezone || opts.fallbackTimeZone || "UTC",
    sender: {
      name: [me?.firstName, me?.lastName].filter(Boolean).join(" ") || job.user,
      email: opts.user?.email ?? me?.email ?? null,
      faxCallerId: me?.faxCallerId || null,
    },
    readDocument: (d) => opts.store.readDocument(d),
    now: opts.now,
    pageImage: opts.pageImage ?? true,
    ...(opts.defaultCountryCode ? { defaultCountryCode: opts.defaultCountryCode } : {}),
  });
}
