// A parsed mail plus its checked envelope becomes one fax job (send-to-many): documents in
// message order, a cover page from subject and body when wanted, overrides from the subject,
// and everything left out recorded with its reason.
import { createHash } from 'node:crypto';
import { FaxgateError } from '../errors.js';
import type { LeftOut, NewDocument, NewJob, NewRecipient } from '../store/types.js';
import { classifyPart } from './attachment-policy.js';
import { bodyText } from './body-text.js';
import { coverSpec } from './cover.js';
import type { ParsedMail } from './mail-parse.js';
import { parseSubjectOverrides, wallTimeToUtc } from './subject-overrides.js';

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
  /** The user's emailToFaxCoverPageOption, or null when the service could not be asked. */
  coverPreference: boolean | null;
  /** The account's time zone, asked only when the subject schedules the fax. */
  timezone: () => Promise<string>;
  /** The cover's sender: the checked user's name (never the From header's display name). */
  senderName?: string;
  inlineImageMinBytes: number;
  original: { path: string; sha256: string };
  now: number;
}

/** Same Message-ID, sender and recipients: the same message delivered twice. */
export function mailDedupeKey(messageId: string | null, contentSha256: string, envelopeFrom: string, numbers: string[]): string {
  const id = messageId ? `mid:${messageId.trim().toLowerCase()}` : `sha:${contentSha256}`;
  const basis = [id, envelopeFrom.toLowerCase(), ...[...new Set(numbers)].sort()].join('\n');
  return `smtp:${createHash('sha256').update(basis).digest('hex')}`;
}

function nothingToFax(why: string): FaxgateError {
  return new FaxgateError('NOTHING_TO_FAX', why, { smtpReply: `554 5.6.0 Nothing to fax: ${why}` });
}

export async function mailToJob(input: MailToJobInput): Promise<NewJob> {
  const { parsed } = input;
  const documents: NewDocument[] = [];
  const leftOut: LeftOut[] = [];
  for (const part of parsed.parts) {
    const d = await classifyPart(part, input.inlineImageMinBytes);
    if (d.use) documents.push({ path: part.path, name: part.filename, contentType: d.contentType, move: true });
    else leftOut.push({ name: part.filename, reason: d.reason });
  }

  const overrides = parseSubjectOverrides(parsed.subject);
  const notes = bodyText(parsed);
  let cover: boolean;
  if (overrides.cover !== undefined) cover = overrides.cover;
  else cover = input.coverPreference === true || (documents.length === 0 && notes !== '');

  if (documents.length === 0 && !cover) {
    const refused = leftOut.map((l) => `${l.name} (${l.reason})`).join('; ');
    if (refused) throw nothingToFax(`no attachment can be faxed: ${clip(refused, 300)}`);
    if (overrides.cover === false) throw nothingToFax('[nocover] was asked and the message has no attachment');
    throw nothingToFax('the message has no attachment and no text for a cover page');
  }
  if (documents.length === 0 && cover && notes === '' && overrides.subject === '') {
    throw nothingToFax('the message has no attachment, no subject and no text');
  }

  let scheduledAt: string | null = null;
  if (overrides.at) {
    scheduledAt = wallTimeToUtc(overrides.at, await input.timezone());
    if (Date.parse(scheduledAt) < input.now - 5 * 60_000) {
      throw new FaxgateError('NOTHING_TO_FAX', 'the send time is in the past', { smtpReply: `554 5.6.0 The send time [at ${overrides.at.replace('T', ' ')}] is in the past` });
    }
  }

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
    source: 'smtp',
    user: input.user,
    recipients,
    documents,
    cover: coverSpec({
      enabled: cover,
      subject: overrides.subject,
      notes,
      recipientName: recipients.length === 1 ? recipients[0]!.name : undefined,
      senderName: input.senderName,
    }),
    scheduledAt,
    dedupeKey: mailDedupeKey(parsed.messageId, input.original.sha256, input.envelopeFrom, recipients.map((r) => r.number)),
    meta: { ...(leftOut.length ? { leftOut } : {}), origin },
    original: { path: input.original.path, name: 'message.eml', contentType: 'message/rfc822', move: true },
  };
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 3)}...` : s;
}
