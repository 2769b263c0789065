// The daemon rows' load generator (bench/smtp-daemon.bench.ts): plain JavaScript on node's net
// module, no loader, no mail library, so its own CPU is small and the same whichever server it
// drives. Every message is built before the clock starts, each different (its own Message-ID and
// content), so every one is a new job under faxgate's default duplicate window, which
// smtp-source(1) cannot give (it sends one file again and again). MAIL, RCPT and DATA go
// pipelined (RFC 2920), then the data and its dot. Two workloads:
//   reuse: each session sends its messages one after another on one connection (a relay with a
//     connection cache); latency from MAIL FROM to the 250.
//   connect: one connection per message (what smtp-source does, a relay without a connection
//     cache and most Internet senders): connect, greeting, EHLO, the transaction, QUIT; SESSIONS
//     such connections at once; latency from connect to the 250, the greeting included.
// Usage: node smtp-blast.mjs PORT SESSIONS MESSAGES KIND FROM TO [reuse|connect]
//   KIND: pdf (a 100 KB PDF attachment and a short body), text1k (1 KB of text only), text100k.
// Prints one JSON line: accepted, seconds, latencies (ms), failures.
import { randomBytes } from "node:crypto";
import net from "node:net";
import { performance } from "node:perf_hooks";

const [port, sessions, messages] = [2, 3, 4].map((i) => Number(process.argv[i]));
const [kind, from, to] = [process.argv[5], process.argv[6], process.argv[7]];
const mode = process.argv[8] ?? "reuse";
if (mode !== "reuse" && mode !== "connect") throw new Error(`unknown workload ${mode}`);
const run = `${process.pid}-${Date.now()}`;

/** `bytes` of printable text, lines of 76, unique to message `i`. */
function text(i, bytes) {
  const seed = randomBytes(Math.ceil(bytes / 2)).toString("hex");
  const lines = [`message ${i} of run ${run}`];
  let n = lines[0].length + 2;
  for (let o = 0; n < bytes; o += 76) {
    const line = seed.slice(o % (seed.length - 76), (o % (seed.length - 76)) + 76);
    lines.push(line);
    n += line.length + 2;
  }
  return lines.join("\r\n");
}

/** A PDF of about `bytes`, with content unique to message `i`. */
function pdf(i, bytes) {
  const filler = randomBytes(bytes)
    .toString("hex")
    .slice(0, bytes - 200);
  const stream = `BT /F1 12 Tf 72 720 Td (message ${i} of ${run}) Tj ET\n% ${filler}\n`;
  const objs = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${stream.length} >>\nstream\n${stream}endstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let out = "%PDF-1.4\n";
  const offsets = [];
  objs.forEach((o, k) => {
    offsets.push(out.length);
    out += `${k + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

function message(i) {
  const head = `From: ${from}\r\nTo: ${to}\r\nSubject: bench ${i}\r\nMessage-ID: <blast-${i}-${run}@bench>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\n`;
  let body;
  if (kind === "pdf") {
    const b64 = pdf(i, 100_000).toString("base64").replace(/.{76}/g, "$&\r\n");
    body =
      `Content-Type: multipart/mixed; boundary=B${i}\r\n\r\n--B${i}\r\nContent-Type: text/plain\r\n\r\nPlease fax the attached letter (${i}).\r\n--B${i}\r\n` +
      `Content-Type: application/pdf; name=letter.pdf\r\nContent-Disposition: attachment; filename=letter.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--B${i}--\r\n`;
  } else {
    body = `Content-Type: text/plain; charset=utf-8\r\n\r\n${text(i, kind === "text1k" ? 1024 : 100_000)}\r\n`;
  }
  // no line of ours starts with a dot, so no dot-stuffing is needed
  return Buffer.from(`${head}${body}.\r\n`, "latin1");
}

const raws = Array.from({ length: messages + sessions }, (_, i) => message(i));
const envelope = Buffer.from(`MAIL FROM:<${from}>\r\nRCPT TO:<${to}>\r\nDATA\r\n`);

/** A session: reads replies line by line; `next(n)` resolves with the next n final replies. */
function session() {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    s.setNoDelay(true);
    let buf = "";
    const replies = [];
    let want = null;
    const pump = () => {
      if (want && replies.length >= want.n) {
        const w = want;
        want = null;
        w.resolve(replies.splice(0, w.n));
      }
    };
    s.on("data", (d) => {
      buf += d.toString("latin1");
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line[3] !== "-") replies.push(line);
      }
      pump();
    });
    s.on("error", (e) => (want ? want.reject(e) : reject(e)));
    const next = (n) =>
      new Promise((res, rej) => {
        want = { n, resolve: res, reject: rej };
        pump();
      });
    s.once("connect", async () => {
      try {
        const [greeting] = await next(1);
        if (!greeting.startsWith("220")) throw new Error(`greeting: ${greeting}`);
        s.write("EHLO blast.bench\r\n");
        await next(1);
        resolve({ s, next });
      } catch (e) {
        reject(e);
      }
    });
  });
}

async function send(c, raw) {
  c.s.write(envelope);
  const r = await c.next(3);
  if (!r[0].startsWith("250") || !r[1].startsWith("250") || !r[2].startsWith("354"))
    throw new Error(`envelope: ${r.join(" | ")}`);
  c.s.write(raw);
  const [done] = await c.next(1);
  return done;
}

/** One message on a connection of its own: connect, greeting, EHLO, the message, QUIT. */
async function sendAlone(raw) {
  const c = await session();
  try {
    return await send(c, raw);
  } finally {
    c.s.end("QUIT\r\n");
  }
}

const latencies = [];
let failures = 0;
let firstFailure = null;
let nextI = 0;
const tally = (reply, s) => {
  if (reply.startsWith("250")) latencies.push(performance.now() - s);
  else {
    failures += 1;
    firstFailure ??= reply;
  }
};
let t0;
if (mode === "reuse") {
  const conns = await Promise.all(Array.from({ length: sessions }, () => session()));
  // one warm-up message per session
  await Promise.all(conns.map((c, k) => send(c, raws[messages + k])));
  t0 = performance.now();
  await Promise.all(
    conns.map(async (c) => {
      while (nextI < messages) {
        const i = nextI++;
        const s = performance.now();
        tally(await send(c, raws[i]), s);
      }
    }),
  );
  for (const c of conns) c.s.end("QUIT\r\n");
} else {
  // one warm-up message per sender, each on its own connection too
  await Promise.all(Array.from({ length: sessions }, (_, k) => sendAlone(raws[messages + k])));
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, async () => {
      while (nextI < messages) {
        const i = nextI++;
        const s = performance.now();
        tally(await sendAlone(raws[i]).catch((e) => `error: ${e.message}`), s);
      }
    }),
  );
}
const seconds = (performance.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify({ accepted: latencies.length, seconds, latencies, failures, firstFailure })}\n`);
