// E-mail intake speed: 20 concurrent SMTP sessions delivering 600 messages of 100 KB with a PDF
// attachment, each answered 250 only once durably queued in a real store. Accepted messages per
// second, the p99 time of one message (MAIL FROM to 250) and the process's RSS. The same load
// generator (bench/smtp-load.ts, its own process) then drives a private Postfix (the peer: its 250
// also means the queue file is fsynced) and smtp-sink (the ceiling: it does no work at all); see
// bench/lib/postfix.ts. Without Postfix installed the peer is the issue's figure for Postfix on this
// machine (570 msg/s), labelled as such, and the report says how to install it.
// Run alone: node --import tsx bench/smtp-accept.bench.ts
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { UserConfig } from '../src/config/schema.js';
import type { FaxApi, User } from '../src/fax/types.js';
import { faxgateModule } from './lib/daemon.js';
import { percentile, runSmtpLoad, type LoadResult } from './lib/load.js';
import { postfixTools, runSmtpSource, startPostfix, startSmtpSink, type Running } from './lib/postfix.js';
import type { BenchResult } from './types.js';

const SESSIONS = 20;
const MESSAGES = 600;
const MESSAGE_BYTES = 100_000;
const DOMAIN = 'fax.example.com';
const POSTFIX_ISSUE_FIGURE = 570;
/** FAXGATE_BENCH_ROUNDS overrides; the median round is reported */
const ROUNDS = Number(process.env.FAXGATE_BENCH_ROUNDS) || 3;
const USER: UserConfig = { name: 'bench', email: 'bench@example.com', aliases: [], apiKey: 'bench-key' };

/** Only /v1/me is asked (the cover preference); nothing else of the service is needed here. */
const stubApi = { me: async () => ({ emailToFaxCoverPageOption: false, firstName: 'Bench', lastName: null, account: { timezone: 'UTC' } }) as unknown as User } as unknown as FaxApi;

interface Measured {
  label: string;
  rate: number;
  p99: number;
}

function measured(label: string, r: LoadResult): Measured {
  if (r.accepted !== MESSAGES) throw new Error(`${label}: only ${r.accepted} of ${MESSAGES} accepted`);
  return { label, rate: r.accepted / r.seconds, p99: percentile(r.latencies, 99) };
}

/** The same load against a server started for it, stopped whatever happens. */
async function against(start: () => Promise<Running>, extra?: (s: Running) => Promise<void>): Promise<Measured> {
  const server = await start();
  try {
    const m = measured(server.label, await runSmtpLoad({ port: server.port, sessions: SESSIONS, messages: MESSAGES, from: USER.email }));
    await extra?.(server);
    return m;
  } finally {
    await server.stop();
  }
}

// built, as the daemon runs (FAXGATE_BENCH_SOURCE=1: from source through tsx)
const { configSchema } = await faxgateModule<typeof import('../src/config/schema.js')>('config/schema');
const { UserDirectory } = await faxgateModule<typeof import('../src/fax/user-directory.js')>('fax/user-directory');
const { silentLogger } = await faxgateModule<typeof import('../src/log/logger.js')>('log/logger');
const { SmtpGateway } = await faxgateModule<typeof import('../src/smtp/server.js')>('smtp/server');
const { SqliteStore } = await faxgateModule<typeof import('../src/store/sqlite/store.js')>('store/sqlite/store');
const { ReaderPool } = await faxgateModule<typeof import('../src/workers/pool.js')>('workers/pool');

async function ours(): Promise<Measured & { rssBefore: number; peakRss: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'faxgate-bench-'));
  const store = SqliteStore.open({ dataDir: path.join(dir, 'data') });
  const smtp = { ...configSchema.parse({ smtp: { listen: ['127.0.0.1:0'], domains: [DOMAIN] } }).smtp!, maxMessagesPerMinute: 1_000_000, maxConnections: 100 };
  // mail parsed on worker threads, as the daemon does
  const readers = new ReaderPool();
  const gateway = new SmtpGateway({
    smtp, users: [USER], dataDir: path.join(dir, 'data'), store, clientFor: () => stubApi,
    directory: new UserDirectory({ clientFor: () => stubApi }), logger: silentLogger(), readers,
  });
  const [addr] = await gateway.listen();
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    // the load comes from another process, as smtp-source's does for Postfix
    const r = await runSmtpLoad({ port: addr!.port, sessions: SESSIONS, messages: MESSAGES, from: USER.email });
    if (!r.replies.every((x) => x.id !== null)) throw new Error('a 250 without "queued as"');
    return { ...measured('faxgate', r), rssBefore, peakRss };
  } finally {
    clearInterval(timer);
    await gateway.close({ timeoutMs: 1000 });
    await readers.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The median round by rate; its p99 is the median of the rounds' p99s (each figure on its own). */
function median<T extends Measured>(rounds: T[]): T {
  const mid = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const byRate = [...rounds].sort((x, y) => x.rate - y.rate)[Math.floor(rounds.length / 2)]!;
  return { ...byRate, p99: mid(rounds.map((r) => r.p99)) };
}

export default async function bench(): Promise<BenchResult[]> {
  const tools = postfixTools();
  const notes: string[] = [];
  if (tools.postfixUnavailable) notes.push(tools.postfixUnavailable);
  if (!tools.smtpSink && tools.postfix) notes.push('smtp-sink not found (it comes with the postfix package): no ceiling row');
  // Rounds alternate faxgate, Postfix and smtp-sink so that other work on the machine weighs on all
  // three alike; each figure is the median of its rounds.
  const mine: Array<Awaited<ReturnType<typeof ours>>> = [];
  const pf: Measured[] = [];
  const sinks: Measured[] = [];
  let smtpSource: number | null = null;
  for (let round = 0; round < ROUNDS; round++) {
    mine.push(await ours());
    if (!tools.postfixUnavailable) {
      pf.push(
        await against(
          () => startPostfix(tools, DOMAIN),
          async (s) => {
            if (round === 0 && tools.smtpSource) smtpSource = await runSmtpSource(tools, { port: s.port, sessions: SESSIONS, messages: MESSAGES, bytes: MESSAGE_BYTES, from: USER.email, to: `15551234567@${DOMAIN}` });
          },
        ),
      );
    }
    if (tools.smtpSink) sinks.push(await against(() => startSmtpSink(tools)));
  }
  const me = median(mine);
  const peakRss = Math.max(...mine.map((m) => m.peakRss));
  const postfix = pf.length > 0 ? median(pf) : null;
  const sink = sinks.length > 0 ? median(sinks) : null;
  const spread = (xs: Measured[]) => (xs.length > 1 ? ` (rounds: ${xs.map((x) => x.rate.toFixed(0)).join(', ')})` : '');
  process.stderr.write(`bench: smtp msg/s faxgate${spread(mine)}, Postfix${spread(pf)}, smtp-sink${spread(sinks)}\n`);

  const load = `${SESSIONS} sessions, ${MESSAGES} x 100 KB + PDF`;
  const samePf = postfix ? `${postfix.label}, same load` : '';
  const sameSink = sink ? `${sink.label}, same load` : '';
  const peerRate = postfix ? { label: samePf, value: postfix.rate } : { label: 'Postfix: the issue\'s figure, not measured here', value: POSTFIX_ISSUE_FIGURE };
  const note = notes.length > 0 ? notes.join('; ') : undefined;
  const rows: BenchResult[] = [
    { figure: `smtp: durable accept rate, ${load}`, value: me.rate, unit: 'msg/s', peer: peerRate, goal: '>= 1.0x Postfix', note },
    { figure: 'smtp: p99 MAIL FROM -> 250 (durably queued)', value: Math.round(me.p99), unit: 'ms', ...(postfix ? { peer: { label: samePf, value: Math.round(postfix.p99) } } : {}) },
  ];
  if (sink) {
    rows.push(
      { figure: 'smtp: durable accept rate, against the ceiling', value: me.rate, unit: 'msg/s', peer: { label: sameSink, value: sink.rate } },
      { figure: 'smtp: p99 MAIL FROM -> 250, against the ceiling', value: Math.round(me.p99), unit: 'ms', peer: { label: sameSink, value: Math.round(sink.p99) } },
    );
  }
  if (postfix && smtpSource !== null) {
    rows.push({ figure: 'smtp: Postfix under its own smtp-source (a connection per message)', value: smtpSource, unit: 'msg/s', peer: { label: 'the same Postfix under bench/smtp-load.ts', value: (postfix as Measured).rate } });
  }
  rows.push(
    { figure: `smtp: peak RSS of the bench process (in-process gateway, ${ROUNDS} rounds)`, value: Math.round(peakRss / 1e6), unit: 'MB' },
    { figure: 'smtp: RSS growth of the bench process, first round to peak', value: Math.round((peakRss - mine[0]!.rssBefore) / 1e6), unit: 'MB' },
  );
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await bench()) console.log(`${r.figure}: ${r.value.toFixed(1)} ${r.unit}${r.peer ? ` (peer ${r.peer.value.toFixed(1)} ${r.unit}, ${r.peer.label})` : ''}${r.note ? ` [${r.note}]` : ''}`);
}
