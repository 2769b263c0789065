// E-mail intake speed: 20 concurrent SMTP sessions delivering 600 messages of 100 KB with a PDF
// attachment, each answered 250 only once durably queued in a real store. Accepted messages per
// second and the process's peak RSS. The peer is Postfix's smtp-source when installed; otherwise
// the issue's figure for Postfix on this machine (570 msg/s), labelled as such.
// Run alone: node --import tsx bench/smtp-accept.bench.ts
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import nodemailer from 'nodemailer';
import { configSchema, type UserConfig } from '../src/config/schema.js';
import type { FaxApi, User } from '../src/fax/types.js';
import { UserDirectory } from '../src/fax/user-directory.js';
import { silentLogger } from '../src/log/logger.js';
import { SmtpGateway } from '../src/smtp/server.js';
import { Store } from '../src/store/store.js';
import type { BenchResult } from './types.js';

const SESSIONS = 20;
const MESSAGES = 600;
const POSTFIX_ISSUE_FIGURE = 570;
const USER: UserConfig = { name: 'bench', email: 'bench@example.com', aliases: [], apiKey: 'bench-key' };

/** Only /v1/me is asked (the cover preference); nothing else of the service is needed here. */
const stubApi = { me: async () => ({ emailToFaxCoverPageOption: false, firstName: 'Bench', lastName: null, account: { timezone: 'UTC' } }) as unknown as User } as unknown as FaxApi;

function message(i: number): Buffer {
  const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(73_000, 0x20), Buffer.from('\n%%EOF\n')]);
  const b64 = pdf.toString('base64').replace(/.{76}/g, '$&\r\n');
  return Buffer.from(
    `From: bench@example.com\r\nTo: 15551234567@fax.example.com\r\nSubject: bench ${i}\r\nMessage-ID: <bench-${i}-${Date.now()}@bench>\r\nMIME-Version: 1.0\r\n` +
      `Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nbench\r\n--B\r\nContent-Type: application/pdf; name=doc.pdf\r\n` +
      `Content-Disposition: attachment; filename=doc.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--B--\r\n`,
  );
}

async function smtpSourcePeer(): Promise<{ label: string; value: number }> {
  const has = await promisify(execFile)('smtp-source', ['-V']).then(() => true, (e: NodeJS.ErrnoException) => e.code !== 'ENOENT');
  // smtp-source needs a Postfix smtpd to measure against; with neither installed the issue's
  // own measurement on this machine is the reference.
  return has
    ? { label: 'Postfix (issue figure; smtp-source present but no local Postfix run here)', value: POSTFIX_ISSUE_FIGURE }
    : { label: 'Postfix, issue figure measured on this machine', value: POSTFIX_ISSUE_FIGURE };
}

export default async function bench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'faxgate-bench-'));
  const store = Store.open({ dataDir: path.join(dir, 'data') });
  const smtp = { ...configSchema.parse({ smtp: { listen: ['127.0.0.1:0'], domains: ['fax.example.com'] } }).smtp!, maxMessagesPerMinute: 1_000_000, maxConnections: 100 };
  const gateway = new SmtpGateway({
    smtp, users: [USER], dataDir: path.join(dir, 'data'), store, clientFor: () => stubApi,
    directory: new UserDirectory({ clientFor: () => stubApi }), logger: silentLogger(),
  });
  const [addr] = await gateway.listen();
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: addr!.port, ignoreTLS: true, pool: true, maxConnections: SESSIONS, maxMessages: Infinity });
  const raws = Array.from({ length: MESSAGES }, (_, i) => message(i));
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    // warm-up: open the pool's sessions
    await Promise.all(Array.from({ length: SESSIONS }, (_, i) => transport.sendMail({ envelope: { from: USER.email, to: ['15551230000@fax.example.com'] }, raw: message(100_000 + i) })));
    const t0 = performance.now();
    const infos = await Promise.all(raws.map((raw) => transport.sendMail({ envelope: { from: USER.email, to: ['15551234567@fax.example.com'] }, raw })));
    const seconds = (performance.now() - t0) / 1000;
    const accepted = infos.filter((i) => /^250 2\.0\.0 queued as /.test(i.response)).length;
    if (accepted !== MESSAGES) throw new Error(`only ${accepted} of ${MESSAGES} accepted`);
    const peer = await smtpSourcePeer();
    return [
      { figure: `smtp: accepted and durably queued, ${SESSIONS} sessions, 100 KB + PDF`, value: accepted / seconds, unit: 'msg/s', peer },
      { figure: `smtp: peak RSS during ${MESSAGES} messages`, value: Math.round(peakRss / 1e6), unit: 'MB' },
      { figure: 'smtp: RSS growth during the run', value: Math.round((peakRss - rssBefore) / 1e6), unit: 'MB' },
    ];
  } finally {
    clearInterval(timer);
    transport.close();
    await gateway.close({ timeoutMs: 1000 });
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await bench()) console.log(`${r.figure}: ${r.value.toFixed(1)} ${r.unit}${r.peer ? ` (peer ${r.peer.value} ${r.unit}, ${r.peer.label})` : ''}`);
}
