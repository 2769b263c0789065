// ExactReplyServer patches private internals of smtp-server (each connection's send() and its
// NOOP/RSET/VRFY/HELP handlers). package.json pins smtp-server exactly; this test is the alarm for
// the day it is upgraded: it fails as soon as the internals the patch relies on move.
import { afterEach, describe, expect, it } from 'vitest';
import { ExactReplyServer } from '../../src/smtp/exact-reply-server.js';
import { replyError } from '../../src/smtp/smtp-reply.js';
import { RawSmtp } from '../helpers/raw-smtp.js';

let server: ExactReplyServer | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function start(maxJunkCommands?: number): Promise<{ port: number; replies: number[] }> {
  const replies: number[] = [];
  server = new ExactReplyServer(
    {
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      onMailFrom: (_a, _s, cb) => cb(replyError('550 5.7.1 Sender refused by the test')),
    },
    (code) => replies.push(code),
    { maxJunkCommands },
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
    for (const name of ['send', 'handler_NOOP', 'handler_RSET', 'handler_VRFY', 'handler_HELP']) expect(typeof conns[0]![name], name).toBe('function');
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
});
