// A proved sender is not a wanted fax (issue 48): mail whose recipients no signature proved (a
// stranger in MX mode, a mailbox whose provider does not sign To/Cc) may have been replayed or
// rewritten to a number of someone else's choice. With confirmNewDestinations, a fax to a number
// its user never faxed before waits for the user's one click in a mail (the console's
// /confirm.html); the whole job waits, one fax to all its recipients. Numbers already faxed go.
// Trusted relays, SMTP AUTH, the console, the CLI and print never ask: there the person was
// proved and chose the number.
import type { SenderAuthConfig, UserConfig } from "../config/index.js";
import type { Logger } from "../log/index.js";
import { waitsForConfirmation, type QueueStore, type Job, type NewJob } from "../store/index.js";

/** Whether `user`'s mail from `senderDomain` asks for confirmation: the user's switch, else the domain's, else the gateway's. */
export function confirmsNewDestinations(
  auth: Pick<SenderAuthConfig, "confirmNewDestinations" | "domains">,
  user: Pick<UserConfig, "confirmNewDestinations"> | undefined,
  senderDomain: string,
): boolean {
  return (
    user?.confirmNewDestinations ??
    auth.domains?.[senderDomain.toLowerCase()]?.confirmNewDestinations ??
    auth.confirmNewDestinations
  );
}

/** The job's numbers its user never faxed before (none: it goes as usual). */
export async function newDestinations(
  store: Pick<QueueStore, "faxedNumbers">,
  job: Pick<NewJob, "user" | "recipients">,
): Promise<string[]> {
  const numbers = [...new Set(job.recipients.map((r) => r.number))];
  const faxed = new Set(await store.faxedNumbers(job.user, numbers));
  return numbers.filter((n) => !faxed.has(n));
}

/**
 * A held job asks its owner: the "confirm" mail (once per job, also when the door is asked again
 * for a duplicate after a lost answer). Nothing for a job that no longer waits.
 */
export async function askToConfirm(
  store: Pick<QueueStore, "enqueueNotification">,
  job: Job,
  log: Logger,
): Promise<void> {
  if (!waitsForConfirmation(job)) return;
  await store.enqueueNotification({
    kind: "confirm",
    user: job.user,
    jobId: job.id,
    dedupeKey: `confirm:${job.id}`,
    payload: { jobId: job.id },
  });
  log.info({ job: job.id }, "HELD waits for its owner to confirm a new number in the console");
}
