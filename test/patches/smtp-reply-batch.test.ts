// The replies of patches/smtp-server+exact-enhanced-codes.patch's item 6: the replies to the
// commands of one read go out in one write (the socket corked while the parser handles them).
// A real client talks to two real servers, the installed (patched) smtp-server and upstream's
// (the same package with the patch undone, server, connection and parser): every session must
// get byte-identical replies from both, one command at a time or pipelined, with refusals and
// with a handler that answers later; a pipelined MAIL, RCPT and DATA is answered by one write of
// the patched server's socket (upstream's makes three), and a reply held back never waits for a
// handler of a later command, so a handler that waits for the client to see a reply still ends.
import net, { type AddressInfo, type Socket } from "node:net";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { afterEach, describe, expect, it } from "vitest";
import { loadUnpatchedTree } from "../helpers/unpatched.js";

const PATCH = "smtp-server+exact-enhanced-codes.patch";
const upstream = loadUnpatchedTree<{ SMTPServer: typeof SMTPServer }>("smtp-server", "dist/cjs/smtp-server.js", PATCH);

/** What the client saw of one step: each 'data' event's bytes, and the server socket's writes meanwhile. */
interface Step {
  events: string[];
  writes: number;
}

/** A step: what the client sends in one write, and how many replies it then waits for. */
type Script = Array<{ send: string; replies: number }>;

const started: SMTPServer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
});

/**
 * A server of `Server` with the same handlers for both: MAIL and RCPT answer a turn later (as an
 * application that awaits something does), "bad@" is refused, "late@" answers after a timer, and
 * "wait@" answers only once `release` is called.
 */
async function start(
  Server: typeof SMTPServer,
  release: { wait?: Promise<void> } = {},
): Promise<{ port: number; writes: () => number }> {
  let writes = 0;
  const options: SMTPServerOptions = {
    name: "mx.test",
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    hideENHANCEDSTATUSCODES: false,
    disableReverseLookup: true,
    onMailFrom(address, _session, callback) {
      if (address.address.startsWith("late@")) return void setTimeout(callback, 20);
      if (address.address.startsWith("wait@")) return void release.wait?.then(() => callback());
      void Promise.resolve().then(() => callback());
    },
    onRcptTo(address, _session, callback) {
      void Promise.resolve().then(() => {
        if (!address.address.startsWith("bad@")) return callback();
        callback(Object.assign(new Error("No such fax user"), { responseCode: 550 }));
      });
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on("end", () => callback(null, "queued as 1"));
    },
  };
  const server = new Server(options);
  started.push(server);
  // every write of the accepted socket reaches node's one write path (_writeGeneric), a write
  // or a writev of several replies: that is one write(2)/writev(2) each
  server.server.on("connection", (socket: Socket & { _writeGeneric: (...a: unknown[]) => unknown }) => {
    const write = socket._writeGeneric;
    socket._writeGeneric = function (this: Socket, ...args: unknown[]) {
      writes += 1;
      return write.apply(this, args);
    };
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.server.address() as AddressInfo).port, writes: () => writes };
}

/** Runs a script on a fresh connection (the greeting first): each step's 'data' events and writes. */
async function run(server: { port: number; writes: () => number }, script: Script, seen?: (text: string) => void) {
  const socket = net.connect(server.port, "127.0.0.1");
  socket.setEncoding("latin1");
  let text = "";
  let events: string[] = [];
  let wake = (): void => {};
  socket.on("data", (d: string) => {
    text += d;
    events.push(d);
    seen?.(text);
    wake();
  });
  const replies = (): number => (text.match(/^\d{3} [^\n]*\n/gm) ?? []).length;
  const steps: Step[] = [];
  let want = 0;
  for (const step of [{ send: "", replies: 1 }, ...script]) {
    const before = server.writes();
    events = [];
    want += step.replies;
    if (step.send) socket.write(step.send);
    while (replies() < want) await new Promise<void>((resolve) => (wake = resolve));
    steps.push({ events, writes: server.writes() - before });
  }
  socket.destroy();
  return { text, steps };
}

const MESSAGE = "Subject: hi\r\n\r\nline one\r\n..a dot\r\n.\r\n";
const ONE_BY_ONE: Script = [
  { send: "EHLO client.test\r\n", replies: 1 },
  { send: "MAIL FROM:<a@x.test>\r\n", replies: 1 },
  { send: "RCPT TO:<b@x.test>\r\n", replies: 1 },
  { send: "DATA\r\n", replies: 1 },
  { send: MESSAGE, replies: 1 },
  { send: "QUIT\r\n", replies: 1 },
];
const PIPELINED: Script = [
  { send: "EHLO client.test\r\n", replies: 1 },
  { send: "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@x.test>\r\nDATA\r\n", replies: 3 },
  { send: MESSAGE, replies: 1 },
  { send: "QUIT\r\n", replies: 1 },
];
const REFUSALS: Script = [
  { send: "EHLO client.test\r\n", replies: 1 },
  {
    send: "RSET\r\nNOOP\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<bad@x.test>\r\nRCPT TO:<b@x.test>\r\nDATA\r\n",
    replies: 6,
  },
  { send: `${MESSAGE}MAIL FROM:<a@x.test>\r\nDATA\r\nQUIT\r\n`, replies: 4 },
];
// an unknown command's reply makes smtp-server yield to the event loop: the replies before it go
// out then, in a write of their own
const UNKNOWN: Script = [
  { send: "EHLO client.test\r\nBOGUS\r\nMAIL FROM:<a@x.test>\r\nBOGUS\r\nRCPT TO:<b@x.test>\r\nQUIT\r\n", replies: 6 },
];
const LATE: Script = [
  { send: "EHLO client.test\r\n", replies: 1 },
  { send: "MAIL FROM:<late@x.test>\r\nRCPT TO:<b@x.test>\r\nDATA\r\n", replies: 3 },
  { send: MESSAGE, replies: 1 },
  { send: "QUIT\r\n", replies: 1 },
];

describe("smtp-server's replies to a pipelined group, patched against upstream", () => {
  it("sends upstream's bytes, one command at a time, pipelined, refused and answered late", async () => {
    const patched = await start(SMTPServer);
    const reference = await start(upstream.SMTPServer);
    for (const script of [ONE_BY_ONE, PIPELINED, REFUSALS, UNKNOWN, LATE]) {
      const ours = await run(patched, script);
      const theirs = await run(reference, script);
      expect(ours.text).toBe(theirs.text);
      expect(ours.text).toMatch(/^220 mx\.test /);
      expect(ours.text).toMatch(/221 2\.0\.0 Bye\r\n$/);
    }
    // the same session, pipelined or not, gets the same replies
    expect((await run(patched, PIPELINED)).text).toBe((await run(patched, ONE_BY_ONE)).text);
    const refused = (await run(patched, REFUSALS)).text;
    expect(refused).toContain("550 5.1.1 No such fax user\r\n");
    expect((await run(patched, UNKNOWN)).text).toContain("500 5.5.2 Error: command not recognized\r\n");
  });

  it("answers a pipelined MAIL, RCPT and DATA in one write", async () => {
    const patched = await run(await start(SMTPServer), PIPELINED);
    const reference = await run(await start(upstream.SMTPServer), PIPELINED);
    const group = patched.steps[2]!;
    expect(group.writes).toBe(1);
    expect(group.events).toEqual([
      "250 2.1.0 Accepted\r\n250 2.1.5 Accepted\r\n354 End data with <CR><LF>.<CR><LF>\r\n",
    ]);
    // the counter sees each write: upstream's are three
    expect(reference.steps[2]!.writes).toBe(3);
    // six replies, a refusal among them, in one write too
    const refusals = await run(await start(SMTPServer), REFUSALS);
    expect(refusals.steps[2]!.writes).toBe(1);
    expect(refusals.steps[2]!.events).toHaveLength(1);
  });

  it("does not hold a reply back while a later command's handler waits", async () => {
    // the MAIL handler answers only once the client has the NOOP's reply: a NOOP reply held
    // until the parser is done with the chunk would wait for ever
    let sawNoop = (): void => {};
    const release = { wait: new Promise<void>((resolve) => (sawNoop = resolve)) };
    const server = await start(SMTPServer, release);
    const { text } = await run(
      server,
      [
        { send: "EHLO client.test\r\n", replies: 1 },
        { send: "NOOP\r\nMAIL FROM:<wait@x.test>\r\n", replies: 2 },
        { send: "QUIT\r\n", replies: 1 },
      ],
      (seen) => {
        if (/250 2\.0\.0 OK\r\n/.test(seen)) sawNoop();
      },
    );
    expect(text).toMatch(/250 2\.0\.0 OK\r\n250 2\.1\.0 Accepted\r\n221 /);
  });
});
