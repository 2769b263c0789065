// MIME cases from test/fixtures/mail: the streaming parser and the mail-to-job rules on real files.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isFaxgateError } from '../../src/errors.js';
import { parseMail } from '../../src/intake/mail-parse.js';
import { mailToJob, type MailToJobInput } from '../../src/intake/mail-to-job.js';

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'mail');
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'faxgate-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
async function load(name: string) {
  const sub = path.join(dir, String(++n));
  mkdirSync(sub);
  const file = path.join(sub, 'message.eml');
  copyFileSync(path.join(FIXTURES, name), file);
  return { file, parsed: await parseMail(file, sub) };
}

async function job(name: string, over: Partial<MailToJobInput> = {}) {
  const { file, parsed } = await load(name);
  return mailToJob({
    parsed,
    user: 'alice',
    envelopeFrom: 'alice@example.com',
    recipients: [{ address: '15551234567@fax.example.com', number: '+15551234567' }],
    coverPreference: false,
    timezone: async () => 'America/New_York',
    inlineImageMinBytes: 20_480,
    original: { path: file, sha256: 'x' },
    now: Date.parse('2026-11-21T12:00:00Z'),
    ...over,
  });
}

describe('charsets and transfer encodings', () => {
  it('decodes RFC 2047 words (Q and B, two charsets) and a windows-1252 quoted-printable body', async () => {
    const { parsed } = await load('charsets-latin1-qp.eml');
    expect(parsed.subject).toBe('Résumé für die Bürgerin €10');
    expect(parsed.from).toEqual({ name: 'Jürgen Müller', address: 'alice@example.com' });
    expect(parsed.recipients[0]!.name).toBe('François Désiré');
    expect(parsed.text).toContain('Grüße aus Köln – das kostet 10 €.');
    expect(parsed.text).toContain('damit die Zeile wieder zusammengesetzt');
    const j = await job('charsets-latin1-qp.eml');
    // No attachment but a body: a cover page carries the text.
    expect(j.cover).toMatchObject({ enabled: true, subject: 'Résumé für die Bürgerin €10', recipientName: 'François Désiré' });
    // the From header's display name ("Jürgen Müller") is unverified: the cover names the checked user
    expect(j.cover.senderName).toBeUndefined();
    expect(j.cover.notes).toContain('Grüße aus Köln');
    expect(j.documents).toEqual([]);
  });

  it('decodes a KOI8-R base64 body and an ISO-2022-JP subject', async () => {
    const { parsed } = await load('charsets-koi8r-base64.eml');
    expect(parsed.text.trim()).toBe('Привет, это факс.');
    expect(parsed.subject).toBe('日本語');
  });
});

describe('documents', () => {
  it('turns a legacy-charset text attachment into UTF-8 text', async () => {
    const j = await job('text-attachment-latin1.eml');
    expect(j.documents.map((d) => [d.name, d.contentType])).toEqual([['brief.txt', 'text/plain']]);
    expect(readFileSync(j.documents[0]!.path, 'utf8')).toContain('Frau Müller, anbei die Unterlagen für Köln.');
  });

  it('takes the attachments of a forwarded message, in message order', async () => {
    const j = await job('forwarded.eml');
    expect(j.documents.map((d) => d.name)).toEqual(['contract.pdf', 'cover-letter.pdf']);
    expect(j.documents.every((d) => d.contentType === 'application/pdf')).toBe(true);
    for (const d of j.documents) expect(readFileSync(d.path, 'latin1')).toMatch(/^%PDF-1\.4/);
    expect(j.meta?.leftOut).toBeUndefined();
  });

  it('leaves out a small inline logo and renders the HTML body to text for the cover', async () => {
    const j = await job('inline-logo.eml', { coverPreference: true });
    expect(j.documents.map((d) => d.name)).toEqual(['report.pdf']);
    expect(j.meta?.leftOut).toEqual([{ name: 'logo.png', reason: expect.stringContaining('inline picture') }]);
    expect(j.cover.enabled).toBe(true);
    expect(j.cover.notes).toMatch(/Hello BOB,|Hello Bob,/);
    expect(j.cover.notes).not.toContain('<');
  });

  it('keeps an inline image as a page when it is large enough to be a document', async () => {
    const j = await job('inline-logo.eml', { inlineImageMinBytes: 10 });
    expect(j.documents.map((d) => d.name)).toEqual(['logo.png', 'report.pdf']);
  });

  it('leaves out signatures, vCards and invitations with reasons', async () => {
    const j = await job('signed.eml');
    expect(j.documents.map((d) => d.name)).toEqual(['order.pdf']);
    const reasons = Object.fromEntries((j.meta?.leftOut ?? []).map((l) => [l.name, l.reason]));
    expect(reasons['alice.vcf']).toMatch(/vCard/);
    expect(reasons['invite.ics']).toMatch(/calendar/);
    expect(reasons['smime.p7s']).toMatch(/signature/);
  });

  it('refuses a winmail.dat-only mail as nothing to fax, naming why', async () => {
    const err = await job('winmail.eml').catch((e: unknown) => e);
    expect(isFaxgateError(err, 'NOTHING_TO_FAX')).toBe(true);
    expect((err as { smtpReply: string }).smtpReply).toMatch(/^554 5\.6\.0 .*winmail\.dat/);
  });

  it('checks content as well as type: a zip named .pdf and a GIF are refused, a docx, a text file and an unnamed PDF are taken', async () => {
    const j = await job('mixed-types.eml');
    expect(j.documents.map((d) => [d.name, d.contentType])).toEqual([
      ['letter.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
      ['notes.txt', 'text/plain'],
      ['scan', 'application/pdf'],
    ]);
    const reasons = Object.fromEntries((j.meta?.leftOut ?? []).map((l) => [l.name, l.reason]));
    expect(reasons['invoice.pdf']).toMatch(/application\/pdf but its content is a ZIP archive/);
    expect(reasons['anim.gif']).toMatch(/GIF images cannot be faxed/);
  });
});

describe('cover page and overrides', () => {
  it('follows the preference, and [nocover]/[cover] in the subject win and are removed', async () => {
    expect((await job('forwarded.eml', { coverPreference: true })).cover.enabled).toBe(true);
    const { file, parsed } = await load('forwarded.eml');
    parsed.subject = 'Contract [nocover]';
    const off = await mailToJob({ parsed, user: 'alice', envelopeFrom: 'a@x', recipients: [{ address: 'x', number: '+15551234567' }], coverPreference: true, timezone: async () => 'UTC', inlineImageMinBytes: 0, original: { path: file, sha256: 'x' }, now: 0 });
    expect(off.cover).toEqual({ enabled: false });
    parsed.subject = '[cover] Contract';
    const on = await mailToJob({ parsed, user: 'alice', envelopeFrom: 'a@x', recipients: [{ address: 'x', number: '+15551234567' }], coverPreference: false, timezone: async () => 'UTC', inlineImageMinBytes: 0, original: { path: file, sha256: 'x' }, now: 0 });
    expect(on.cover).toMatchObject({ enabled: true, subject: 'Contract' });
  });

  it('schedules [at ...] in the account time zone and refuses a time in the past', async () => {
    const { file, parsed } = await load('forwarded.eml');
    parsed.subject = 'Contract [at 2026-11-22 14:30]';
    const base = { parsed, user: 'alice', envelopeFrom: 'a@x', recipients: [{ address: 'x', number: '+15551234567' }], coverPreference: true, inlineImageMinBytes: 0, original: { path: file, sha256: 'x' } };
    const j = await mailToJob({ ...base, timezone: async () => 'America/New_York', now: Date.parse('2026-11-21T12:00:00Z') });
    expect(j.scheduledAt).toBe('2026-11-22T19:30:00.000Z');
    expect(j.cover.subject).toBe('Contract');
    const err = await mailToJob({ ...base, timezone: async () => 'America/New_York', now: Date.parse('2026-11-23T12:00:00Z') }).catch((e: unknown) => e);
    expect((err as { smtpReply: string }).smtpReply).toMatch(/^554 5\.6\.0 .*in the past/);
  });

  it('cuts subject, notes and names to the documented limits with an ellipsis', async () => {
    const { file, parsed } = await load('charsets-latin1-qp.eml');
    parsed.subject = 'S'.repeat(80);
    parsed.text = 'N'.repeat(5000);
    const j = await mailToJob({ parsed, user: 'alice', senderName: 'F'.repeat(60), envelopeFrom: 'a@x', recipients: [{ address: 'x', number: '+15551234567', contactName: 'C'.repeat(50) }], coverPreference: null, timezone: async () => 'UTC', inlineImageMinBytes: 0, original: { path: file, sha256: 'x' }, now: 0 });
    expect(Array.from(j.cover.subject!)).toHaveLength(55);
    expect(j.cover.subject!.endsWith('…')).toBe(true);
    expect(Array.from(j.cover.notes!)).toHaveLength(4000);
    expect(Array.from(j.cover.senderName!)).toHaveLength(40);
    expect(Array.from(j.cover.recipientName!)).toHaveLength(40);
  });
});
