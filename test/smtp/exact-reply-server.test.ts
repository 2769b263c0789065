// ExactReplyServer patches private internals of smtp-server (each connection's send(), its
// NOOP/RSET/VRFY/HELP handlers and connectionReady(), the greeting). package.json pins smtp-server exactly; this test is the alarm for
// the day it is upgraded: it fails as soon as the internals the patch relies on move.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ExactReplyServer } from '../../src/smtp/exact-reply-server.js';
import { replyError } from '../../src/smtp/smtp-reply.js';
import { RawSmtp } from '../helpers/raw-smtp.js';

let server: ExactReplyServer | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function start(maxJunkCommands?: number, greetingDelayMs?: (address: string) => number): Promise<{ port: number; replies: number[] }> {
  const replies: number[] = [];
  server = new ExactReplyServer(
    {
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      onMailFrom: (_a, _s, cb) => cb(replyError('550 5.7.1 Sender refused by the test')),
    },
    (code) => replies.push(code),
    { maxJunkCommands, greetingDelayMs },
  );
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const a = server.server.address();
  return { port: typeof a === 'object' && a ? a.port : 0, replies };
}

describe('the smtp-server internals ExactReplyServer patches', () => {
  it('are still there: each connection has send() and the junk command handlers', async () => {
    const { port } = await start();
    const { client } = await RawSmtp.connect(port);
    const conns = [...(server as unknown as { connections: Set<Record<string, unknown>> }).connections];
    expect(conns).toHaveLength(1);
    for (const name of ['send', 'connectionReady', 'handler_NOOP', 'handler_RSET', 'handler_VRFY', 'handler_HELP']) expect(typeof conns[0]![name], name).toBe('function');
    client.close();
  });

  it('our enhanced status code is sent as written, and every reply reaches the hook', async () => {
    const { port, replies } = await start();
    const { client } = await RawSmtp.connect(port);
    await client.cmd('EHLO x');
    // smtp-server alone would send "550 5.1.1 ..." (its guess from 550)
    expect(await client.cmd('MAIL FROM:<a@b.example>')).toBe('550 5.7.1 Sender refused by the test');
    expect(replies).toContain(550);
    client.close();
  });

  it('junk commands are bounded', async () => {
    const { port } = await start(2);
    const { client } = await RawSmtp.connect(port);
    await client.cmd('EHLO x');
    expect(await client.cmd('NOOP')).toMatch(/^250/);
    expect(await client.cmd('NOOP')).toMatch(/^250/);
    expect(await client.cmd('NOOP')).toMatch(/^421 4\.7\.0 Too many NOOP/);
    client.close();
  });

  it('the greeting pause is chosen per client: none, shorter or longer than smtp-server\'s 100 ms, one greeting each time', async () => {
    const asked: string[] = [];
    let delay = 0;
    const { port, replies } = await start(undefined, (address) => {
      asked.push(address);
      return delay;
    });
    for (delay of [0, 40, 400]) {
      const t0 = Date.now();
      const { client, banner } = await RawSmtp.connect(port);
      const waited = Date.now() - t0;
      expect(banner, `delay ${delay}`).toMatch(/^220 /);
      expect(waited, `delay ${delay}`).toBeGreaterThanOrEqual(delay - 5);
      // smtp-server's own timer (100 ms) has fired by now, or is held back: no second 220
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(await client.cmd('NOOP')).toMatch(/^250 /);
      client.close();
    }
    expect(asked).toHaveLength(3);
    for (const a of asked) expect(a).toMatch(/127\.0\.0\.1$/);
    expect(replies.filter((c) => c === 220)).toHaveLength(3);
  });

  it('a client that talks before its (longer) pause is over gets 421 and is cut', async () => {
    const { port } = await start(undefined, () => 400);
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1').on('data', (d: string) => (text += d));
    await new Promise((resolve) => socket.once('connect', resolve));
    // after smtp-server's own 100 ms, before ours: only the held-back greeting stops it
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.write('EHLO early.example\r\n');
    await new Promise((resolve) => socket.once('close', resolve));
    expect(text).toMatch(/^421 /);
    expect(text).not.toMatch(/^220 /m);
  });
});
