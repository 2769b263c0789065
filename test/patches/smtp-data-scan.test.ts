// The DATA scan of patches/smtp-server+exact-enhanced-codes.patch (its item 5: a native search
// for a dot with a line feed in front of it instead of a byte loop, no copy of each chunk)
// against smtp-server's own code, the installed file with that patch undone: random command and
// DATA streams, cut into random chunks, must give the same commands, the same message bytes and
// the same ends, terminators and escape dots straddling chunk boundaries and 1-byte chunks
// included. The last tests send the real server a terminator, bare-LF dot lines (smuggling
// attempts) and an escape dot cut into TCP segments, each read by the server before the next is
// sent.
import type { AddressInfo, Socket } from "node:net";
import type { PassThrough, Writable } from "node:stream";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { byteCuts, fuzzStream, randomCuts } from "../helpers/fuzz.js";
import { prng } from "../helpers/prng.js";
import { loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

interface DataStream extends PassThrough {
  byteLength: number;
  sizeExceeded: boolean;
}
interface SmtpStream extends Writable {
  oncommand(command: Buffer, callback?: () => void): void;
  startDataMode(maxBytes?: number): DataStream;
  continue(): void;
}
type StreamClass = new () => SmtpStream;

const PATCH = "smtp-server+exact-enhanced-codes.patch";
const upstream = loadUnpatched<{ SMTPStream: StreamClass }>("smtp-server", "dist/cjs/smtp-stream.js", PATCH);
const patchedCjs = loadInstalled<{ SMTPStream: StreamClass }>("smtp-server", "dist/cjs/smtp-stream.js");
const patchedEsm = (await import("smtp-server/lib/smtp-stream.js")) as unknown as { SMTPStream: StreamClass };

/** What a stream makes of the chunks: each command, each message (bytes, byte count, size flag), an error. */
async function parse(Stream: StreamClass, chunks: Buffer[], maxBytes?: number): Promise<string[]> {
  const stream = new Stream();
  const events: string[] = [];
  stream.oncommand = (command, callback) => {
    const line = command.toString("latin1");
    events.push(`command ${JSON.stringify(line)}`);
    if (line.toUpperCase() === "DATA") {
      const data = stream.startDataMode(maxBytes);
      const parts: Buffer[] = [];
      data.on("data", (d: Buffer) => parts.push(d));
      data.on("end", () => {
        const body = Buffer.concat(parts).toString("latin1");
        events.push(`message ${JSON.stringify(body)} ${data.byteLength} ${data.sizeExceeded}`);
        stream.continue();
      });
      // later, as smtp-server does once its 354 is out: a DATA handler that called back at
      // once would run the next message inside continue(), which then drops that message's
      // continuation (upstream's, patched or not)
      if (callback) setImmediate(callback);
      return;
    }
    callback?.();
  };
  const over = new Promise<void>((resolve) => {
    stream.on("finish", resolve);
    stream.on("error", (err) => {
      events.push(`error ${err.message}`);
      resolve();
    });
  });
  for (const c of chunks) stream.write(c);
  stream.end();
  await over;
  return events;
}

// the pieces a stream is made of: what can begin, end or escape a message, and ordinary text
const PIECES = [
  "DATA\r\n",
  "DATA\r\n",
  "\r\n.\r\n",
  "\r\n.\r\n",
  ".\r\n",
  ".",
  "..",
  "...",
  "\r",
  "\n",
  "\r\n",
  "\n.",
  "\r\n.",
  "\r\n..",
  "\n..\n",
  ".\r",
  "NOOP\r\n",
  "MAIL FROM:<a@b>\r\n",
  "x",
  "Subject: hi\r\n",
  "line of text",
];

function randomStream(next: () => number): Buffer {
  const parts: string[] = [];
  const n = 1 + Math.floor(next() * 60);
  for (let k = 0; k < n; k++) {
    const r = next();
    if (r < 0.03) parts.push("a".repeat(1 + Math.floor(next() * 3000)));
    else parts.push(PIECES[Math.floor(next() * PIECES.length)]);
  }
  // most streams start a message at once
  return Buffer.from((next() < 0.8 ? "DATA\r\n" : "") + parts.join(""), "latin1");
}

/** Cuts at random places, every byte, or around every "\n." (where a terminator or an escape may be split). */
function chunkings(input: Buffer, next: () => number): Buffer[][] {
  const random = randomCuts(input, () => 1 + Math.floor(next() * (next() < 0.5 ? 8 : 200)));
  const around: Buffer[] = [];
  let from = 0;
  for (let at = input.indexOf("\n."); at !== -1; at = input.indexOf("\n.", at + 1)) {
    const cut = at + Math.floor(next() * 5) - 1;
    if (cut > from && cut < input.length) {
      around.push(input.subarray(from, cut));
      from = cut;
    }
  }
  around.push(input.subarray(from));
  return [[input], random, around, byteCuts(input)];
}

describe("smtp-server's DATA scan, patched against upstream", () => {
  it("gives upstream's commands and messages for random streams in random chunkings", async () => {
    const { seed, next } = fuzzStream();
    for (let round = 0; round < 250; round++) {
      const input = randomStream(next);
      const whole = await parse(upstream.SMTPStream, [input]);
      for (const chunks of chunkings(input, next)) {
        const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${JSON.stringify(input.toString("latin1"))}`;
        // upstream's own result does not depend on the chunking either
        expect(await parse(upstream.SMTPStream, chunks), context).toEqual(whole);
        expect(await parse(patchedEsm.SMTPStream, chunks), context).toEqual(whole);
        expect(await parse(patchedCjs.SMTPStream, chunks), context).toEqual(whole);
      }
    }
  });

  it("cuts a terminator, an escape dot and the start of the data at every place", async () => {
    const cases = [
      "DATA\r\n.\r\nNOOP\r\n",
      "DATA\r\n..\r\n.\r\nNOOP\r\n",
      "DATA\r\n...\r\nx\r\n.\r\nQUIT\r\n",
      "DATA\r\n\n..x\r\n.\r\n",
      "DATA\r\na\r\n..\r\n..b\r\n.\r\nDATA\r\n.\r\n",
      "DATA\r\na\n.\r\nb\r\n.\n\r\n.\r\nRSET\r\n",
      "DATA\r\nab\r\n.\r\r\n.\r\n",
      "DATA\r\n.x\r\n.\r\n",
    ];
    for (const text of cases) {
      const input = Buffer.from(text, "latin1");
      const whole = await parse(upstream.SMTPStream, [input]);
      for (let a = 1; a < input.length; a++) {
        for (let b = a; b < Math.min(input.length, a + 6); b++) {
          const chunks = [input.subarray(0, a), input.subarray(a, b), input.subarray(b)].filter((c) => c.length);
          const context = `${JSON.stringify(text)} cut at ${a} and ${b}`;
          expect(await parse(patchedEsm.SMTPStream, chunks), context).toEqual(whole);
        }
      }
    }
  });

  it("counts the same bytes against the size limit", async () => {
    const input = Buffer.from(`DATA\r\n${"0123456789\r\n..x\r\n".repeat(40)}.\r\nQUIT\r\n`, "latin1");
    const whole = await parse(upstream.SMTPStream, [input], 300);
    expect(whole.some((e) => e.endsWith(" true"))).toBe(true);
    for (const chunks of chunkings(input, prng(7)))
      expect(await parse(patchedEsm.SMTPStream, chunks, 300)).toEqual(whole);
  });
});

describe("the real server, a message cut into TCP segments", () => {
  const messages: string[] = [];
  // bytes the server's sockets have read, to send the next segment only once the one before
  // was read on its own
  let received = 0;
  let wake: (() => void) | null = null;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    earlyTalkerDelay: 0,
    logger: false,
    onData(stream, _session, callback) {
      const parts: Buffer[] = [];
      stream.on("data", (d: Buffer) => parts.push(d));
      stream.on("end", () => {
        messages.push(Buffer.concat(parts).toString("latin1"));
        callback();
      });
    },
  });
  server.server.on("connection", (socket: Socket) => {
    socket.on("data", (d: Buffer) => {
      received += d.length;
      wake?.();
    });
  });
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Sends the DATA payload in these segments, each read by the server before the next; the replies after 354. */
  async function send(segments: string[]): Promise<string[]> {
    const { client } = await RawSmtp.connect(port);
    try {
      expect(await client.cmd("EHLO cut.example")).toMatch(/^250/);
      expect(await client.cmd("MAIL FROM:<a@example.com>")).toMatch(/^250/);
      expect(await client.cmd("RCPT TO:<b@example.com>")).toMatch(/^250/);
      expect(await client.cmd("DATA")).toMatch(/^354/);
      for (const segment of segments) {
        const until = received + segment.length;
        const read = new Promise<void>((resolve) => {
          wake = () => {
            if (received >= until) resolve();
          };
        });
        client.write(segment);
        await read;
      }
      const replies: string[] = [];
      for (let r = await client.reply(); r; r = await client.reply()) {
        replies.push(r.slice(0, 3));
        if (r.startsWith("221")) break;
      }
      return replies;
    } finally {
      client.close();
    }
  }

  it("ends the message at a terminator cut at any place, and only there", async () => {
    const body = "Subject: cut\r\n\r\n..dot\r\nline\r\n";
    const tail = ".\r\nNOOP\r\nQUIT\r\n";
    for (let cut = 1; cut < 5; cut++) {
      const payload = `${body}${tail}`;
      const at = body.length - 2 + cut;
      messages.length = 0;
      expect(await send([payload.slice(0, at), payload.slice(at)])).toEqual(["250", "250", "221"]);
      expect(messages).toEqual(["Subject: cut\r\n\r\n.dot\r\nline\r\n"]);
    }
  });

  it("does not end the message at a bare-LF dot line cut across segments (smuggling)", async () => {
    const smuggled = "MAIL FROM:<x@example.com>\r\nRCPT TO:<y@example.com>\r\nDATA\r\nsmuggled\r\n";
    for (const end of ["\n.\n", "\r\n.\n", "\n.\r\n", "\r.\r\n"]) {
      for (let cut = 1; cut < end.length; cut++) {
        messages.length = 0;
        const segments = [`a\r\nb${end.slice(0, cut)}`, `${end.slice(cut)}${smuggled}`, ".\r\nQUIT\r\n"];
        expect(await send(segments), JSON.stringify(segments)).toEqual(["250", "221"]);
        expect(messages).toEqual([`a\r\nb${end}${smuggled}`]);
      }
    }
  });

  it("keeps a first line of one dot, sent dot-stuffed with its escape in a segment of its own", async () => {
    messages.length = 0;
    expect(await send([".", ".\r\n", "x\r\n.\r\nQUIT\r\n"])).toEqual(["250", "221"]);
    expect(messages).toEqual([".\r\nx\r\n"]);
  });
});
