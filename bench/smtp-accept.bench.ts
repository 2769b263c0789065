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
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
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
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    // the load comes from another process, as smtp-source's does for Postfix
    const load = path.join(path.dirname(fileURLToPath(import.meta.url)), 'smtp-load.ts');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', load, String(addr!.port), String(SESSIONS), String(MESSAGES), USER.email], { maxBuffer: 16 << 20 });
    const r = JSON.parse(stdout.trim().split('\n').pop()!) as { accepted: number; seconds: number; latencies: number[] };
    if (r.accepted !== MESSAGES) throw new Error(`only ${r.accepted} of ${MESSAGES} accepted`);
    const sorted = [...r.latencies].sort((a, b) => a - b);
    const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
    const peer = await smtpSourcePeer();
    return [
      { figure: `smtp: accepted and durably queued, ${SESSIONS} sessions, 100 KB + PDF`, value: r.accepted / r.seconds, unit: 'msg/s', peer, goal: `>= ${POSTFIX_ISSUE_FIGURE}` },
      { figure: 'smtp: p99 time of one message, MAIL FROM to 250 (durably queued)', value: Math.round(p99), unit: 'ms' },
      { figure: `smtp: peak RSS during ${MESSAGES} messages`, value: Math.round(peakRss / 1e6), unit: 'MB' },
      { figure: 'smtp: RSS growth during the run', value: Math.round((peakRss - rssBefore) / 1e6), unit: 'MB' },
    ];
  } finally {
    clearInterval(timer);
    await gateway.close({ timeoutMs: 1000 });
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await bench()) console.log(`${r.figure}: ${r.value.toFixed(1)} ${r.unit}${r.peer ? ` (peer ${r.peer.value} ${r.unit}, ${r.peer.label})` : ''}`);
}
