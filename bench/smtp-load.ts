// The SMTP load generator of bench/smtp-accept.bench.ts, run as its own process (as Postfix's
// smtp-source is) so that it does not share the gateway's event loop. Sends MESSAGES raw messages
// over SESSIONS pooled sessions, after one warm-up message per session, and prints one JSON line.
import { performance } from 'node:perf_hooks';
import nodemailer from 'nodemailer';

const [port, sessions, messages, from] = [Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4]), process.argv[5]!];

function message(i: number): Buffer {
  const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(73_000, 0x20), Buffer.from('\n%%EOF\n')]);
  const b64 = pdf.toString('base64').replace(/.{76}/g, '$&\r\n');
  return Buffer.from(
    `From: ${from}\r\nTo: 15551234567@fax.example.com\r\nSubject: bench ${i}\r\nMessage-ID: <bench-${i}-${Date.now()}@bench>\r\nMIME-Version: 1.0\r\n` +
      `Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nbench\r\n--B\r\nContent-Type: application/pdf; name=doc.pdf\r\n` +
      `Content-Disposition: attachment; filename=doc.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--B--\r\n`,
  );
}

// one connection per session; each session sends its messages one after another, so a latency is
// one message's own time from MAIL FROM to the 250, not time spent waiting for a free session
const envelope = { from, to: ['15551234567@fax.example.com'] };
const transports = Array.from({ length: sessions }, () => nodemailer.createTransport({ host: '127.0.0.1', port, ignoreTLS: true, pool: true, maxConnections: 1, maxMessages: Infinity }));
await Promise.all(transports.map((t, i) => t.sendMail({ envelope, raw: message(100_000 + i) })));
const raws = Array.from({ length: messages }, (_, i) => message(i));
const latencies: number[] = [];
let next = 0;
let accepted = 0;
const t0 = performance.now();
await Promise.all(
  transports.map(async (t) => {
    while (next < raws.length) {
      const raw = raws[next++]!;
      const s = performance.now();
      const info = await t.sendMail({ envelope, raw });
      latencies.push(performance.now() - s);
      if (/^250 2\.0\.0 queued as /.test(info.response)) accepted += 1;
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
for (const t of transports) t.close();
process.stdout.write(`${JSON.stringify({ accepted, seconds, latencies })}\n`);
