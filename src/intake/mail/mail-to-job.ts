// A parsed mail plus its checked envelope becomes one fax job (send-to-many): documents in
// message order, a cover page from subject and body when wanted, overrides from the subject,
// and everything left out recorded with its reason.
import path from "node:path";
import type { MailBodyMode, PartialMode } from "../../config/index.js";
import { FaxgateError } from "../../errors.js";
import type { LeftOut, NewDocument, NewJob, NewRecipient } from "../../store/index.js";
import { classifyPart } from "./attachment-policy.js";
import { bodyText, coverNotes } from "./body-text.js";
import { COVER_LIMITS, coverSpec } from "./cover.js";
import { FAXABLE_TYPES, headOf, sniffBuffer } from "../documents/file-type.js";
import type { ExtractedPart, ParsedMail } from "./mail-parse.js";
import type { DocumentConverter } from "../office/convert-queue.js";
import { officeExtension, pdfName } from "../office/office-convert.js";
import { parseSubjectOverrides, wallTimeToUtc } from "./subject-overrides.js";
import { sha256Hex } from "../../sha256.js";

export interface EnvelopeRecipient {
  /** The RCPT TO address as given. */
  address: string;
  /** E.164 */
  number: string;
  /** The contact's name when the address named one. */
  contactName?: string;
}

export interface MailToJobInput {
  parsed: ParsedMail;
  /** Config user name. */
  user: string;
  envelopeFrom: string;
  recipients: EnvelopeRecipient[];
  /**
   * The user's emailToFaxCoverPageOption, or null when the service could not be asked (and had not
   * answered before): a mail whose cover it decides is then refused for now (451), never guessed.
   */
  coverPreference: boolean | null;
  /** The account's time zone, asked only when the subject schedules the fax. */
  timezone: () => Promise<string>;
  /** The cover's sender: the checked user's name (never the From header's display name). */
  senderName?: string;
  inlineImageMinBytes: number;
  /** The message: its file, or its bytes when it was held in memory (`data`). */
  /** `sha256`: the kept message's, or how to take it (asked only for mail without a Message-ID) */
  original: { path: string; sha256: string | (() => Promise<string>); data?: Buffer };
  now: number;
  /** Turns office documents into PDF; without one they are refused as if none were installed. */
  office?: DocumentConverter;
  /** Where the text of the mail goes (smtp.body, or the user's mailBody). Default auto. */
  bodyMode?: MailBodyMode;
  /** An attachment that cannot be faxed refuses the mail (default) or is sent without (intake.partial). */
  partial?: PartialMode;
  /** Bytes for the text page from the message's reused memory (WorkDir.scratch); null or absent: new ones. */
  scratch?: (bytes: number) => Buffer | null;
}

/** The name the mail's text has as a document and in "left out" lists. */
export const BODY_DOCUMENT_NAME = "message.txt";
const BODY_LEFT_OUT = "the text of the message";

/**
 * At most COVER_LIMITS.notes characters (code points). Counted only when the UTF-16 length cannot
 * tell: spreading a long body into an array of its characters was the largest single item of the
 * daemon's main-thread profile under 100 KB text mails (docs/bench.md).
 */
function fitsNotes(text: string): boolean {
  if (text.length <= COVER_LIMITS.notes) return true;
  if (text.length > 2 * COVER_LIMITS.notes) return false;
  let n = 0;
  for (const _ of text) if (++n > COVER_LIMITS.notes) return false;
  return true;
}

/** Where the body goes: cover notes, a typeset first page, or nowhere (listed as left out). */
export function placeBody(
  mode: MailBodyMode,
  text: string,
  cover: boolean,
  coverForced: boolean | undefined,
  hasDocuments = false,
): { notes: boolean; page: boolean; leftOut?: string } {
  if (text === "") return { notes: false, page: false };
  switch (mode) {
    case "ignore":
      return { notes: false, page: false, leftOut: "the mail text is not faxed (smtp.body: ignore)" };
    case "page":
      return { notes: false, page: true };
    case "cover":
      if (cover) return { notes: true, page: false };
      return {
        notes: false,
        page: false,
        leftOut:
          coverForced === false
            ? "the mail text goes on the cover page and [nocover] was asked"
            : "the mail text goes on the cover page and there is none",
      };
    default:
      // auto: the cover's notes when there is a cover and the text fits there; a text-only mail is
      // a page; with documents attached and no cover the text ("please see attached") is not a
      // page of its own at the recipient's paper and the sender's cost
      if (cover && fitsNotes(text)) return { notes: true, page: false };
      if (!hasDocuments || cover) return { notes: false, page: true };
      return {
        notes: false,
        page: false,
        leftOut:
          "with documents attached and no cover page the mail text is not faxed; write [page] in the subject to fax it as a first page",
      };
  }
}

/** Same Message-ID, sender and recipients: the same message delivered twice. */
export async function mailDedupeKey(
  messageId: string | null,
  contentSha256: string | (() => Promise<string>),
  envelopeFrom: string,
  numbers: string[],
): Promise<string> {
  const id = messageId
    ? `mid:${messageId.trim().toLowerCase()}`
    : `sha:${typeof contentSha256 === "string" ? contentSha256 : await contentSha256()}`;
  const basis = [id, envelopeFrom.toLowerCase(), ...[...new Set(numbers)].sort()].join("\n");
  return `smtp:${sha256Hex(basis)}`;
}

/**
 * The refusal of a mail with files that cannot be faxed: each named (a reply line has room for
 * about 500 characters, so the reasons are dropped before any name is).
 */
export function incomplete(missing: LeftOut[]): FaxgateError {
  const withReasons = missing.map((m) => `${m.name} (${m.reason})`).join("; ");
  const names = missing.map((m) => m.name).join(", ");
  const list = withReasons.length <= 300 ? withReasons : clip(names, 300);
  const why = `not faxed, so that nothing you attached is left out: ${list}. Send ${missing.length > 1 ? "these" : "it"} as PDF, or send the mail without ${missing.length > 1 ? "them" : "it"}`;
  return new FaxgateError("UNSUPPORTED_TYPE", why, { smtpReply: `554 5.6.0 ${why[0]!.toUpperCase()}${why.slice(1)}` });
}

function nothingToFax(why: string): FaxgateError {
  return new FaxgateError("NOTHING_TO_FAX", why, { smtpReply: `554 5.6.0 Nothing to fax: ${why}` });
}

type MailDocument = NewDocument & { officeExt?: string };

export async function mailToJob(input: MailToJobInput): Promise<NewJob> {
  const { parsed } = input;
  const { documents, leftOut } = await sortParts(input);
  const overrides = parseSubjectOverrides(parsed.subject);
  const fullText = bodyText(parsed);
  const body = placeText(input, overrides, fullText, documents.length > 0);
  if (body.leftOut) leftOut.push({ name: BODY_LEFT_OUT, reason: body.leftOut });
  refuseEmpty(documents, leftOut, body, overrides);
  const scheduledAt = await sendTime(input, overrides.at);
  const finalDocs = await finalDocuments(input, documents, body.page ? fullText : null);

  // Display names of the envelope recipients from the To/Cc headers; a contact's own name wins.
  const headerNames = new Map(parsed.recipients.map((r) => [r.address.toLowerCase(), r.name]));
  const recipients: NewRecipient[] = input.recipients.map((r) => {
    const name = r.contactName ?? headerNames.get(r.address.toLowerCase());
    return name ? { number: r.number, name } : { number: r.number };
  });

  const origin: Record<string, string> = { envelopeFrom: input.envelopeFrom, subject: parsed.subject };
  if (parsed.messageId) origin.messageId = parsed.messageId;
  if (parsed.from?.address) origin.from = parsed.from.address;

  return {
    source: "smtp",
    user: input.user,
    recipients,
    documents: finalDocs,
    cover: coverSpec({
      enabled: body.cover,
      subject: overrides.subject,
      notes: body.notes,
      recipientName: recipients.length === 1 ? recipients[0]!.name : undefined,
      senderName: input.senderName,
      replySheet: overrides.reply,
    }),
    scheduledAt,
    dedupeKey: await mailDedupeKey(
      parsed.messageId,
      input.original.sha256,
      input.envelopeFrom,
      recipients.map((r) => r.number),
    ),
    meta: leftOut.length ? { leftOut, origin } : { origin },
    original: originalDocument(input.original.path, input.original.data),
  };
}

/**
 * The received message as a job's original: its bytes when held in memory, else its file, moved
 * in. (A literal per case, not a spread of the choice: docs/bench.md "keys added after a spread".)
 */
export function originalDocument(path: string, data: Buffer | null | undefined): NewDocument {
  const [name, contentType] = ["message.eml", "message/rfc822"];
  if (data) return { path, name, contentType, data };
  return { path, name, contentType, move: true };
}

/**
 * The parts as documents (office ones marked for conversion) and what is left out. A file the
 * sender meant to fax that cannot be refuses the mail (the fax would be less than they meant)
 * unless intake.partial says send, and always when nothing attached can be faxed.
 */
async function sortParts(input: MailToJobInput): Promise<{ documents: MailDocument[]; leftOut: LeftOut[] }> {
  const documents: MailDocument[] = [];
  const leftOut: LeftOut[] = [];
  const missing: LeftOut[] = [];
  for (const part of input.parsed.parts) {
    const d = await classifyPart(part, input.inlineImageMinBytes);
    if (!d.use) {
      (d.meant ? missing : leftOut).push({ name: part.filename, reason: d.reason });
      continue;
    }
    if (FAXABLE_TYPES.has(d.contentType)) {
      documents.push({ path: part.path, name: part.filename, contentType: d.contentType, ...partContent(part) });
      continue;
    }
    // an office document: converted to PDF later, once the mail is known to be acceptable
    const ext = officeExtension(part.filename, sniffBuffer(await headOf(part)), part.contentType);
    if (ext)
      documents.push({
        path: part.path,
        name: part.filename,
        contentType: d.contentType,
        ...partContent(part),
        officeExt: ext,
      });
    else missing.push({ name: part.filename, reason: `${d.contentType} cannot be faxed` });
  }
  // nothing attached can be faxed: refused whatever intake.partial says (a cover saying "please
  // see attached" with nothing attached is not what anyone meant to send)
  if (missing.length && documents.length === 0) {
    throw nothingToFax(
      `no attachment can be faxed: ${clip(missing.map((l) => `${l.name} (${l.reason})`).join("; "), 300)}`,
    );
  }
  if (missing.length && input.partial !== "send") throw incomplete(missing);
  leftOut.unshift(...missing.map((m) => ({ ...m, sentWithout: true })));
  return { documents, leftOut };
}

interface PlacedText {
  cover: boolean;
  /** the text of the cover's notes ("" for none) */
  notes: string;
  /** the whole text goes as a first page */
  page: boolean;
  /** why the text is not faxed, when it is not */
  leftOut?: string;
  /** the text as cover notes or page would carry it */
  text: string;
}

/** Whether there is a cover, and where the mail's text goes (smtp.body, [page], [cover]). */
function placeText(
  input: MailToJobInput,
  overrides: ReturnType<typeof parseSubjectOverrides>,
  fullText: string,
  hasDocuments: boolean,
): PlacedText {
  // [page] asks for the text as a page whatever smtp.body says
  const mode = overrides.page ? "page" : (input.bodyMode ?? "auto");
  // as cover notes the text goes without its signature and disclaimer; as a page, whole
  // notes longer than the cover takes (coverSpec reads 4 times its limit) are not cut further
  const text =
    mode === "page" ? fullText : coverNotes(fullText, COVER_LIMITS.notes * 4) || (hasDocuments ? "" : fullText);
  let cover: boolean;
  if (overrides.cover !== undefined) cover = overrides.cover;
  else {
    const byText = text !== "" && (mode === "cover" || (!hasDocuments && mode === "auto"));
    // a preference the service could not tell is never guessed (a person who wants a cover page
    // would silently get none): where it decides, the mail waits for it (issue 55)
    if (!byText && input.coverPreference === null) throw preferenceUnknown(input.user);
    cover = byText || input.coverPreference === true;
  }
  const place = placeBody(mode, text, cover, overrides.cover, hasDocuments);
  return { cover, notes: place.notes ? text : "", page: place.page, leftOut: place.leftOut, text };
}

/** A mail that would fax nothing, or only an empty cover, is refused saying what it lacks. */
function refuseEmpty(
  documents: MailDocument[],
  leftOut: LeftOut[],
  body: PlacedText,
  overrides: ReturnType<typeof parseSubjectOverrides>,
): void {
  if (documents.length === 0 && !body.cover && !body.page) {
    const refused = leftOut
      .filter((l) => l.name !== BODY_LEFT_OUT)
      .map((l) => `${l.name} (${l.reason})`)
      .join("; ");
    if (refused) throw nothingToFax(`no attachment can be faxed: ${clip(refused, 300)}`);
    if (body.leftOut && body.text !== "") throw nothingToFax(`the message has no attachment and ${body.leftOut}`);
    if (overrides.cover === false) throw nothingToFax("[nocover] was asked and the message has no attachment");
    throw nothingToFax("the message has no attachment and no text for a cover page");
  }
  if (documents.length === 0 && !body.page && body.cover && body.notes === "" && overrides.subject === "") {
    throw nothingToFax("the message has no attachment, no subject and no text");
  }
}

/** The [at ...] of the subject in UTC, in the account's time zone; a time past is refused. */
async function sendTime(input: MailToJobInput, at: string | undefined): Promise<string | null> {
  if (!at) return null;
  const scheduledAt = wallTimeToUtc(at, await input.timezone());
  if (Date.parse(scheduledAt) < input.now - 5 * 60_000) {
    throw new FaxgateError("NOTHING_TO_FAX", "the send time is in the past", {
      smtpReply: `554 5.6.0 The send time [at ${at.replace("T", " ")}] is in the past`,
    });
  }
  return scheduledAt;
}

/**
 * The job's documents: the text as a first page when it goes as one (`page`), then the parts in
 * message order, office documents converted now so that the 250 means the fax can be sent. They
 * are refused outright when they cannot be converted here (checked for all before any conversion
 * starts).
 */
async function finalDocuments(
  input: MailToJobInput,
  documents: MailDocument[],
  page: string | null,
): Promise<NewDocument[]> {
  for (const d of documents) {
    if (!d.officeExt) continue;
    const why = input.office
      ? input.office.unavailableReason(d.name, d.officeExt)
      : `${d.name} is an office document and no converter is set up`;
    if (why) throw new FaxgateError("UNSUPPORTED_TYPE", why, { smtpReply: `554 5.6.0 ${why}` });
  }
  // the recipients were checked at RCPT and the sender's rate taken at MAIL FROM; a conversion is
  // never spent on a mail that has no one left to fax it to
  if (input.recipients.length === 0 && documents.some((d) => d.officeExt)) {
    throw new FaxgateError("NO_RECIPIENTS", "no valid recipients", { smtpReply: "554 5.5.1 No valid recipients" });
  }
  const finalDocs: NewDocument[] = [];
  if (page !== null) {
    // handed over as bytes: the store keeps a small page in its database, a big one as a file
    finalDocs.push({
      path: path.join(path.dirname(input.original.path), "body.txt"),
      name: BODY_DOCUMENT_NAME,
      contentType: "text/plain",
      data: textPageBytes(page, input.scratch),
    });
  }
  for (const { officeExt, ...d } of documents) {
    if (!officeExt) {
      finalDocs.push(d);
      continue;
    }
    const pdf = await input.office!.convert({
      name: d.name,
      ext: officeExt,
      user: input.user,
      ...(d.data ? { data: d.data } : { path: d.path }),
    });
    finalDocs.push({ path: d.path, name: pdfName(d.name), contentType: "application/pdf", data: pdf });
  }
  return finalDocs;
}

/**
 * The text page's bytes: `text` and a line break, in UTF-8, the bytes of `${text}\n`. Written
 * in two steps because the joined string would be a copy of the whole text on the heap (100 KB
 * for a 100 KB mail) made only to be encoded (docs/bench.md, issue 54, "The garbage a mail leaves").
 * `scratch`, when it has room, gives the buffer (exactly n + 1 bytes) instead of a new one.
 */
export function textPageBytes(text: string, scratch?: (bytes: number) => Buffer | null): Buffer {
  const n = Buffer.byteLength(text, "utf8");
  const bytes = scratch?.(n + 1) ?? Buffer.allocUnsafe(n + 1);
  bytes.write(text, 0, "utf8");
  bytes[n] = 0x0a;
  return bytes;
}

/** A part as a document's content: its bytes when held in memory, else its file, moved in. */
function partContent(part: ExtractedPart): Pick<NewDocument, "data" | "move" | "flushedBytes"> {
  if (part.data) return { data: part.data };
  return part.flushedBytes === undefined ? { move: true } : { move: true, flushedBytes: part.flushedBytes };
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 3)}...` : s;
}

/** The cover page preference decides this mail and the service cannot tell it now: the sender tries again. */
function preferenceUnknown(user: string): FaxgateError {
  return new FaxgateError(
    "API_NETWORK",
    `the cover page preference of ${user} cannot be read from the fax service now`,
    {
      temporary: true,
      smtpReply:
        "451 4.3.0 Your cover page preference cannot be read from the fax service just now, please try again later",
    },
  );
}
