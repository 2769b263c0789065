// The SMTP load generator of the bench, run as its own process (as Postfix's smtp-source is) so
// that it does not share the event loop of the server it measures. The same generator drives
// faxgate, a private Postfix and smtp-sink, so their figures compare like with like.
// Sends MESSAGES raw messages over SESSIONS pooled sessions, after one warm-up message per session,
// and prints one JSON line: accepted, seconds, per-message latencies (MAIL FROM to 250), and each
// 250's queue id and wall-clock time (ms since the epoch, sub-ms, comparable across processes).
// Usage: smtp-load.ts PORT SESSIONS MESSAGES FROM [TO] [PDF-FILE] [GAP-MS] [RATE]
//   TO: recipient; "{i}" in it becomes 1000 + the message's number, so each message can have its own
//   fax number (the dispatcher sends one fax per number at a time). Default 15551234567@fax.example.com.
//   PDF-FILE: a real PDF to attach (the service renders it); default a 73 KB PDF-shaped filler.
//   GAP-MS: a pause after each message in a session (a light, steady stream instead of a burst).
//   RATE: a paced load instead of a burst: message i is sent no earlier than i / RATE seconds after
//   the start (by whichever session is free), so the server sees RATE messages a second.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import nodemailer from "nodemailer";

const [port, sessions, messages, from] = [
  Number(process.argv[2]),
  Number(process.argv[3]),
  Number(process.argv[4]),
  process.argv[5]!,
];
const toPattern = process.argv[6] || "15551234567@fax.example.com";
const pdf = process.argv[7]
  ? readFileSync(process.argv[7])
  : Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(73_000, 0x20), Buffer.from("\n%%EOF\n")]);
const b64 = pdf.toString("base64").replace(/.{76}/g, "$&\r\n");
const gapMs = Number(process.argv[8] || 0);
const rate = Number(process.argv[9] || 0);
const toOf = (i: number) => toPattern.replace("{i}", String(1000 + i));

function message(i: number): Buffer {
  return Buffer.from(
    `From: ${from}\r\nTo: ${toOf(i)}\r\nSubject: bench ${i}\r\nMessage-ID: <bench-${i}-${Date.now()}@bench>\r\nMIME-Version: 1.0\r\n` +
      `Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nbench\r\n--B\r\nContent-Type: application/pdf; name=doc.pdf\r\n` +
      `Content-Disposition: attachment; filename=doc.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--B--\r\n`,
  );
}

const envelope = (i: number) => ({ from, to: [toOf(i)] });
const wallNow = () => performance.timeOrigin + performance.now();

// one connection per session; each session sends its messages one after another, so a latency is
// one message's own time from MAIL FROM to the 250, not time spent waiting for a free session
const transports = Array.from({ length: sessions }, () =>
  nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    ignoreTLS: true,
    pool: true,
    maxConnections: 1,
    maxMessages: Infinity,
  }),
);
await Promise.all(
  transports.map((t, i) => t.sendMail({ envelope: envelope(messages + i), raw: message(messages + i) })),
);
const raws = Array.from({ length: messages }, (_, i) => message(i));
const latencies: number[] = [];
const replies: Array<{ i: number; id: string | null; at: number }> = [];
let next = 0;
let accepted = 0;
const t0 = performance.now();
await Promise.all(
  transports.map(async (t) => {
    while (next < raws.length) {
      const i = next++;
      if (rate > 0) {
        const wait = t0 + (i * 1000) / rate - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      const s = performance.now();
      const info = await t.sendMail({ envelope: envelope(i), raw: raws[i]! });
      const end = performance.now();
      latencies.push(end - s);
      // faxgate: "250 2.0.0 queued as ID"; Postfix: "250 2.0.0 Ok: queued as ID"; smtp-sink: "250 2.0.0 Ok"
      if (/^250[ -]/.test(info.response)) {
        accepted += 1;
        replies.push({ i, id: /queued as (\S+)/.exec(info.response)?.[1] ?? null, at: performance.timeOrigin + end });
      }
      if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
for (const t of transports) t.close();
process.stdout.write(`${JSON.stringify({ accepted, seconds, latencies, replies, endedAt: wallNow() })}\n`);
