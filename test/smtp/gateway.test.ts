// The SMTP gateway end to end: nodemailer against the real server, a real store, the emulator.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RawSmtp, converse } from '../helpers/raw-smtp.js';
import { startTestEmulator, type TestEmulator } from '../helpers/emulator.js';
import { DOMAIN, PDF, jobIdOf, startRig, stopEmulator, transport, type Rig } from './harness.js';

let emu: TestEmulator;
let rig: Rig;

beforeAll(async () => {
  emu = await startTestEmulator();
  rig = await startRig(emu);
});
afterAll(async () => {
  await rig?.close();
  await stopEmulator(emu);
});

describe('accepting mail', () => {
  it('queues a PDF to one number and answers 250 with the job id only after it is stored', async () => {
    const info = await transport(rig.port).sendMail({
      from: 'Alice Archer <alice@example.com>',
      to: `"Dr. Who" <1-555-123-4567@${DOMAIN}>`,
      subject: 'Invoice 42',
      text: 'Please find the invoice.',
      attachments: [{ filename: 'invoice.pdf', content: PDF, contentType: 'application/pdf' }],
    });
    expect(info.response).toMatch(/^250 2\.0\.0 queued as \S+$/);
    const job = rig.store.getJob(jobIdOf(info.response))!;
    expect(job).not.toBeNull();
    expect(job.source).toBe('smtp');
    expect(job.user).toBe('alice');
    expect(job.recipients.map((r) => r.number)).toEqual(['+15551234567']);
    expect(job.recipients[0]!.name).toBe('Dr. Who');
    expect(job.documents.map((d) => [d.name, d.contentType])).toEqual([['invoice.pdf', 'application/pdf']]);
    expect(job.cover.enabled).toBe(false); // alice's preference is off and there is a document
    expect(job.original?.contentType).toBe('message/rfc822');
    expect(job.meta.origin?.subject).toBe('Invoice 42');
  });
});
