// Print now, address later: the one way a waiting print job gets its numbers, for the console
// (POST /api/jobs/:id/address) and the CLI (`faxgate address <job> <number>`). The same checks as a
// new fax (intake/new-fax.ts: normalised numbers, contacts looked up with the owner's key, the
// destination policy), then the store's `address` in one transaction.
import { FaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import { waitsForAddress, type QueueStore, type Job } from "../store/index.js";
import { newFaxRecipients } from "./new-fax.js";
import type { DestinationCheck } from "../recipients/index.js";

export interface AddressInput {
  to: string[];
  subject?: string;
  notes?: string;
  cover?: boolean;
  /** How a bad entry is named in a refusal (the CLI says `<number> "x"`). */
  label?: (text: string) => string;
}

export interface AddressDeps {
  store: Pick<QueueStore, "address">;
  destinations: DestinationCheck;
  defaultCountryCode: string;
  /** The owner's key, for contact names; absent: numbers only. */
  contacts?: Pick<FaxApi, "listContacts">;
  /** Whether the owner may queue one more fax now (the console's per-minute limit). */
  mayQueue?: () => boolean;
}

export async function addressWaiting(deps: AddressDeps, job: Job, input: AddressInput): Promise<Job> {
  if (!waitsForAddress(job))
    throw new FaxgateError(
      "JOB_STATE",
      `job ${job.id} is not waiting for a number (it was sent, cancelled or expired meanwhile)`,
    );
  const recipients = await newFaxRecipients({
    to: input.to,
    user: job.user,
    defaultCountryCode: deps.defaultCountryCode,
    destinations: deps.destinations,
    ...(deps.contacts ? { contacts: deps.contacts as FaxApi } : {}),
    ...(input.label ? { label: input.label } : {}),
  });
  if (recipients.length === 0) throw new FaxgateError("USAGE", "give at least one fax number or contact");
  if (recipients.length > 50)
    throw new FaxgateError("TOO_MANY_RECIPIENTS", `${recipients.length} recipients is over the limit of 50`);
  if (deps.mayQueue && !deps.mayQueue())
    throw new FaxgateError("USAGE", "too many faxes from you in the last minute; try again shortly", {
      httpStatus: 429,
    });
  const subject = input.subject?.trim().slice(0, 200) || job.cover.subject;
  const notes = input.notes?.trim().slice(0, 4000) || undefined;
  const recipientName = recipients.length === 1 ? recipients[0]!.name : undefined;
  return deps.store.address(job.id, {
    recipients,
    cover: {
      ...job.cover,
      enabled: input.cover === true || Boolean(notes),
      ...(subject ? { subject } : {}),
      ...(notes ? { notes } : {}),
      ...(recipientName ? { recipientName } : {}),
    },
  });
}
