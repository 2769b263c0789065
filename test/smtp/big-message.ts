// A large mail written straight to a socket from a few constant lines, so that the client side
// of a memory test holds almost nothing: only the server's buffers can grow.
import net from "node:net";

const FIRST = Buffer.concat([Buffer.from("%PDF-1.4\n%"), Buffer.alloc(47, 0x41)]).toString("base64");
const LINE = Buffer.alloc(57, 0x42).toString("base64");

export function bigMessageHead(to: string, n: number): string {
  return [
    "From: alice@example.com",
    `To: ${to}`,
    `Subject: big ${n}`,
    `Message-ID: <big-${n}-${Date.now()}@test>`,
    "MIME-Version: 1.0",
    "Content-Type: multipart/mixed; boundary=BIG",
    "",
    "--BIG",
    "Content-Type: text/plain",
    "",
    "A big scan.",
    "--BIG",
    "Content-Type: application/pdf; name=scan.pdf",
    "Content-Disposition: attachment; filename=scan.pdf",
    "Content-Transfer-Encoding: base64",
    "",
    FIRST,
    "",
  ].join("\r\n");
}

function reply(socket: net.Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const onData = (d: Buffer): void => {
      buf += d.toString("latin1");
      const m = /(?:^|\n)(\d{3}) [^\n]*\n$/.exec(buf);
      if (m) {
        socket.off("data", onData);
        resolve(buf.trim());
      }
    };
    socket.on("data", onData);
    socket.once("error", reject);
  });
}

/** Sends one message of about `bytes` bytes; resolves with the final DATA reply. */
export async function sendBig(port: number, to: string, bytes: number, n: number): Promise<string> {
  const socket = net.connect(port, "127.0.0.1");
  try {
    await reply(socket);
    for (const cmd of ["EHLO big", "MAIL FROM:<alice@example.com>", `RCPT TO:<${to}>`, "DATA"]) {
      socket.write(`${cmd}\r\n`);
      await reply(socket);
    }
    const head = bigMessageHead(to, n);
    socket.write(head);
    const lineBytes = LINE.length + 2;
    const lines = Math.max(0, Math.floor((bytes - head.length - 20) / lineBytes));
    const block = Buffer.from(`${LINE}\r\n`.repeat(1000));
    let left = lines;
    while (left > 0) {
      const chunk = left >= 1000 ? block : block.subarray(0, left * lineBytes);
      left -= Math.min(left, 1000);
      if (!socket.write(chunk)) await new Promise((r) => socket.once("drain", r));
    }
    const final = reply(socket);
    socket.write("--BIG--\r\n.\r\n");
    const answer = await final;
    socket.write("QUIT\r\n");
    return answer;
  } finally {
    socket.end();
  }
}
