// Where a print file goes. What the user typed wins: the sidecar ticket (a CUPS option becomes
// one), then the file name; codes embedded in the document's text address it only when neither
// names a destination. Codes that name another destination than the one typed refuse the file
// (a PDF with a hidden "@@FAX +1 900...@@" saved as "15551234567 - contract.pdf" was once faxed
// to the 900 number): they are never followed and never silently ignored. Subject, notes and
// cover come from the ticket, then the codes, then the name.
import { FaxgateError } from "../../errors.js";
import type { FaxApi } from "../../fax/index.js";
import { type DestinationCheck, normalizeFaxNumber, recipientNumber } from "../../recipients/index.js";
import type { CoverSpec, NewRecipient } from "../../store/index.js";
import { ambiguity, hasAnyCode, type EmbeddedCodes } from "./embedded-codes.js";
import { readPhoneOption, type FaxPrefixRule } from "./dial-string.js";
import { parseFileName } from "./file-name-address.js";
import type { Ticket } from "./ticket.js";

/** A print job that named no destination: it waits for its owner's number (web/addressing.ts). */
export const ADDRESS_LATER = "address later";

export type AddressSource = "ticket" | "codes" | "file name" | typeof ADDRESS_LATER;

export interface Addressing {
  recipients: NewRecipient[];
  cover: CoverSpec;
  subject?: string;
  tags: string[];
  scheduledAt: string | null;
  via: AddressSource;
  /** What was changed in a dial string (pauses dropped, a prefix stripped), for the log and the job. */
  dialNotes: string[];
}

export interface AddressingInput {
  fileName: string;
  ticket?: Ticket;
  /** Codes found in the document's text; undefined when the type has no text (images). */
  codes?: EmbeddedCodes;
  /** Why the document's text could not be read for codes, when it could not. */
  textUnreadable?: string;
  defaultCountryCode: string;
  /** The file's owner: the destination policy applies their own rules. */
  user: string;
  /** The user's API client, only called to look a contact name up. */
  api: () => FaxApi;
  /** The destination policy (recipients/: the user's rules, the gateway's, the built-in). */
  destinations: DestinationCheck;
  /** What to do with the outside-line prefix of a `phone` option (spool.faxPrefix, default strip). */
  faxPrefix?: FaxPrefixRule;
}

const MAX_RECIPIENTS = 50;

export async function decideAddressing(input: AddressingInput): Promise<Addressing> {
  const { ticket, codes } = input;
  const fromName = parseFileName(input.fileName);
  const typed = typedNumbers(input);
  const { recipients, via } = await findRecipients(input, typed.numbers, fromName);
  if (recipients && via !== "codes" && codes) conflictWithCodes(recipients, via, codes, input);
  if (!recipients || recipients.length === 0) throw noDestination(input);
  checkRecipients(input, recipients);

  const subject = ticket?.subject || codes?.subject || fromName.subject;
  const notes = ticket?.notes;
  const recipientName = recipients.length === 1 ? recipients[0]!.name : undefined;
  const enabled = ticket?.cover ?? codes?.cover ?? Boolean(notes);
  const cover: CoverSpec = {
    enabled,
    ...(subject ? { subject } : {}),
    ...(notes ? { notes } : {}),
    ...(recipientName ? { recipientName } : {}),
  };
  return {
    recipients,
    cover,
    subject,
    tags: ticket?.tags ?? [],
    scheduledAt: ticket?.scheduledDate ?? null,
    via,
    dialNotes: typed.notes,
  };
}

/** The ticket's numbers: fax-number, and the print dialog's number (CUPS `phone`), typed like it. */
function typedNumbers({ ticket, faxPrefix }: AddressingInput): { numbers: string[]; notes: string[] } {
  const numbers = ticket ? [...ticket.to] : [];
  const notes: string[] = [];
  if (ticket?.phone) {
    const dial = readPhoneOption(ticket.phone, ticket.faxPrefix, faxPrefix ?? "strip");
    if (!dial.ok) throw new FaxgateError("BAD_NUMBER", dial.reason);
    numbers.push(...dial.numbers);
    notes.push(...dial.notes);
  }
  return { numbers, notes };
}

/** Who the file goes to, from the first source that names someone: ticket, file name, then codes. */
async function findRecipients(
  input: AddressingInput,
  typed: string[],
  fromName: ReturnType<typeof parseFileName>,
): Promise<{ recipients: NewRecipient[] | null; via: AddressSource }> {
  const { ticket, codes } = input;
  // A file name that only looks like numbers ("20240101.pdf") is not a typed destination when the
  // document carries codes: the codes address it, as before.
  const nameNumbers =
    fromName.numbers.length > 0 &&
    (!codes?.fax.length || fromName.numbers.every((n) => normalizeFaxNumber(n, input.defaultCountryCode).ok));
  if (ticket && (typed.length > 0 || ticket.recipientName)) {
    const recipients =
      typed.length > 0
        ? await toRecipients(typed, ticket.recipientName, input)
        : [await contactRecipient(ticket.recipientName!, input)];
    return { recipients, via: "ticket" };
  }
  if (nameNumbers) return { recipients: await toRecipients(fromName.numbers, undefined, input), via: "file name" };
  if (codes && (codes.fax.length > 0 || codes.to)) {
    const why = ambiguity(codes);
    if (why) throw new FaxgateError("AMBIGUOUS_DESTINATION", why);
    const recipients =
      codes.fax.length > 0
        ? await toRecipients(codes.fax, codes.to, input)
        : [await contactRecipient(codes.to!, input)];
    return { recipients, via: "codes" };
  }
  return { recipients: null, via: "file name" };
}

/** No destination anywhere: the refusal says the three ways to give one, and why codes did not. */
function noDestination({ codes, textUnreadable, fileName }: AddressingInput): FaxgateError {
  const hint =
    codes && hasAnyCode(codes)
      ? " (the document has @@ codes but no @@FAX@@ or @@TO@@)"
      : textUnreadable
        ? ` (the document's text could not be read for @@ codes: ${textUnreadable})`
        : "";
  return new FaxgateError(
    "NO_DESTINATION",
    `no fax number was found${hint}: name the file "<number> - <subject>.pdf", add a ticket "${fileName}.json", or put "@@FAX <number>@@" in the document`,
  );
}

/** Every number allowed by the owner's destination policy, and not too many of them. */
function checkRecipients(input: AddressingInput, recipients: NewRecipient[]): void {
  for (const r of recipients) {
    const v = input.destinations(input.user, r.number);
    if (!v.ok) throw new FaxgateError("DESTINATION_REFUSED", `destination not allowed: ${v.reason}`);
  }
  if (recipients.length > MAX_RECIPIENTS) {
    throw new FaxgateError(
      "TOO_MANY_RECIPIENTS",
      `${recipients.length} recipients is over the limit of ${MAX_RECIPIENTS}`,
    );
  }
}

/** What a print job with no destination keeps from its ticket while it waits for an address. */
export function waitingAddressing(ticket: Ticket): Addressing {
  const subject = ticket.subject;
  const notes = ticket.notes;
  const cover: CoverSpec = {
    enabled: ticket.cover ?? Boolean(notes),
    ...(subject ? { subject } : {}),
    ...(notes ? { notes } : {}),
  };
  return {
    recipients: [],
    cover,
    subject,
    tags: ticket.tags ?? [],
    scheduledAt: ticket.scheduledDate ?? null,
    via: ADDRESS_LATER,
    dialNotes: [],
  };
}

/** Refuses a document whose @@FAX@@ codes name a number the typed destination does not. */
function conflictWithCodes(
  recipients: NewRecipient[],
  via: AddressSource,
  codes: EmbeddedCodes,
  input: AddressingInput,
): void {
  const typed = new Set(recipients.map((r) => r.number));
  const other = codes.fax.filter((raw) => {
    const n = normalizeFaxNumber(raw, input.defaultCountryCode);
    return !n.ok || !typed.has(n.e164);
  });
  if (other.length === 0) return;
  const where = via === "ticket" ? "its ticket (or the fax-number print option)" : "its file name";
  throw new FaxgateError(
    "AMBIGUOUS_DESTINATION",
    `the document's text says @@FAX ${other.join("@@, @@FAX ")}@@, but ${where} says ${recipients.map((r) => r.number).join(", ")}; ` +
      "it was not faxed to either. Remove the @@FAX@@ code from the document, or address it the same way in both places",
  );
}

/** Numbers (or contact names, for entries without digits) to recipients, in order, deduplicated. */
async function toRecipients(raw: string[], name: string | undefined, input: AddressingInput): Promise<NewRecipient[]> {
  const out: NewRecipient[] = [];
  for (const entry of raw) {
    let r: NewRecipient;
    if (/[A-Za-z]/.test(entry) && !/\d{4}/.test(entry)) {
      r = await contactRecipient(entry, input);
    } else {
      const n = await recipientNumber({ number: entry }, input);
      if (!n.ok) throw new FaxgateError("BAD_NUMBER", `the fax number ${n.reason}`);
      r = name ? { number: n.recipient.number, name } : n.recipient;
    }
    if (!out.some((x) => x.number === r.number)) out.push(r);
  }
  return out;
}

async function contactRecipient(name: string, input: AddressingInput): Promise<NewRecipient> {
  const c = await recipientNumber({ contact: name }, { ...input, contacts: input.api });
  // a contact's number comes from the service: only its own lookup can refuse it (it throws)
  if (!c.ok) throw new FaxgateError("BAD_NUMBER", `the fax number ${c.reason}`);
  return c.recipient;
}
