// The public MX mode's cost: the accept rate of DKIM-signed, SPF-passing mail from a stranger
// (smtp.senderAuth verify: SPF, DKIM and DMARC checked by mailauth before the job is kept) against
// the very same message from a trusted relay (no check), both into a real store; and how many DNS
// questions the verified mails ask after the first (answers are cached per their TTL).
// The DNS server is dns2 on loopback; mail goes over real SMTP from 127.0.0.2 (in the SPF record)
// and from 127.0.0.1 (the trusted relay), one connection per message, CONCURRENCY at a time.
// Run alone: node --import tsx bench/smtp-sender-auth.bench.ts
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { configSchema } from "../src/config/schema.js";
import { SqliteStore } from "../src/store/sqlite/store.js";
import { ReaderPool } from "../src/intake/reader-pool.js";
import { composeSigned, dkimKey, sendFrom } from "../test/helpers/dkim-mail.js";
import { startTestDns } from "../test/helpers/dns-server.js";
import { benchUser, stubApi } from "./lib/stub-service.js";
import type { BenchResult } from "./types.js";
import { benchSmtpGateway } from "./lib/smtp-gateway.js";

const MESSAGES = Number(process.env.FAXGATE_BENCH_SENDER_AUTH_MESSAGES) || 400;
const CONCURRENCY = 10;
const DOMAIN = "fax.example.com";
const USER = benchUser("bench@signed.test");
const PDF = Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(20_000, 0x20), Buffer.from("\n%%EOF\n")]);

/**
 * Sends `n` messages from `ip` (each a new signed mail: a copy of one is refused as a replay),
 * CONCURRENCY at a time: messages accepted a second.
 */
async function rate(port: number, ip: string, mail: () => Buffer, n: number): Promise<number> {
  let next = 0;
  let accepted = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next += 1;
        const r = await sendFrom(port, { from: USER.email, to: `15551234567@${DOMAIN}`, ip }, mail());
        if (!r.startsWith("250")) throw new Error(`not accepted from ${ip}: ${r.slice(0, 200)}`);
        accepted += 1;
      }
    }),
  );
  return accepted / ((performance.now() - t0) / 1000);
}

export default async function bench(): Promise<BenchResult[]> {
  const key = dkimKey(2048);
  const dns = await startTestDns({
    "signed.test": ["v=spf1 ip4:127.0.0.2 -all"],
    "sel._domainkey.signed.test": [key.record],
    "_dmarc.signed.test": ["v=DMARC1; p=reject"],
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-bench-"));
  const store = SqliteStore.open({ dataDir: path.join(dir, "data"), dedupeWindowMs: -1, threadsNow: true });
  const smtp = {
    ...configSchema.parse({
      smtp: {
        listen: ["127.0.0.1:0"],
        domains: [DOMAIN],
        trustedNetworks: ["127.0.0.1/32"],
        senderAuth: { mode: "verify" },
      },
    }).smtp!,
    maxMessagesPerMinute: 1_000_000,
    maxMessagesPerMinutePerClient: 1_000_000,
    maxConnectionsPerClient: 100,
    greetingDelay: 0,
  };
  const readers = new ReaderPool();
  const gateway = await benchSmtpGateway({
    smtp,
    users: [USER],
    dataDir: path.join(dir, "data"),
    store,
    clientFor: () => stubApi,
    readers,
    dns: { servers: [dns.server] },
  });
  try {
    const [addr] = await gateway.listen();
    const port = addr!.port;
    // one new mail per send, signed before the clock starts: the figure is the gateway's work
    const mails: Buffer[] = [];
    for (let i = 0; i <= 2 * MESSAGES; i += 1)
      mails.push(
        await composeSigned({
          from: USER.email,
          to: `15551234567@${DOMAIN}`,
          ip: "127.0.0.2",
          subject: `bench ${i}`,
          sign: { domain: "signed.test", key: key.privateKey },
          attachments: [{ filename: "doc.pdf", content: PDF }],
        }),
      );
    let taken = 0;
    const raw = () => mails[taken++ % mails.length]!;
    // the first verified mail fills the DNS cache; what the rest ask is counted
    await rate(port, "127.0.0.2", raw, 1);
    const askedFirst = dns.asked.length;
    // alternating rounds, so that other work on the machine weighs on both alike
    const verified: number[] = [];
    const relayed: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      relayed.push(await rate(port, "127.0.0.1", raw, MESSAGES / 2));
      verified.push(await rate(port, "127.0.0.2", raw, MESSAGES / 2));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const load = `${MESSAGES} x 28 KB DKIM-signed (RSA 2048), ${CONCURRENCY} connections at a time`;
    return [
      {
        figure: `smtp: accept rate of verified mail (senderAuth verify: SPF, DKIM, DMARC), ${load}`,
        value: +mean(verified).toFixed(1),
        unit: "msg/s",
        peer: { label: "the same mail from a trusted relay (no check)", value: +mean(relayed).toFixed(1) },
      },
      {
        figure: "smtp: DNS questions for the verified mails after the first (cached per TTL)",
        value: dns.asked.length - askedFirst,
        unit: "queries",
        peer: { label: "questions of the first mail", value: askedFirst },
      },
    ];
  } finally {
    await gateway.close({ timeoutMs: 1000 });
    await readers.close();
    await store.close();
    await dns.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const r of await bench())
    console.log(
      `${r.figure}: ${r.value} ${r.unit}${r.peer ? ` (peer ${r.peer.value} ${r.unit}, ${r.peer.label})` : ""}`,
    );
}
