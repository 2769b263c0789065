import { describe, expect, it } from 'vitest';
import { FaxgateError } from '../../src/errors.js';
import { replyFor } from '../../src/smtp/smtp-reply.js';

function sysError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: something`), { code });
}

describe('replyFor', () => {
  it('says 452 4.3.1 for a full disk, however deep the cause', () => {
    expect(replyFor(sysError('ENOSPC'))).toMatch(/^452 4\.3\.1 /);
    expect(replyFor(new FaxgateError('STORE_UNAVAILABLE', 'the job could not be stored', { cause: sysError('SQLITE_FULL'), temporary: true }))).toMatch(/^452 4\.3\.1 /);
    const wrapped = new FaxgateError('STORE_UNAVAILABLE', 'outer', { cause: new Error('middle', { cause: sysError('EDQUOT') }), temporary: true });
    expect(replyFor(wrapped)).toMatch(/^452 4\.3\.1 /);
  });

  it('says 451 4.3.0 for other trouble of ours, never a 5xx', () => {
    expect(replyFor(sysError('EROFS'))).toMatch(/^451 4\.3\.0 /);
    expect(replyFor(new FaxgateError('STORE_UNAVAILABLE', 'x', { cause: sysError('EIO'), temporary: true }))).toMatch(/^451 4\.3\.0 .*STORE_UNAVAILABLE/);
    expect(replyFor('weird')).toMatch(/^451 4\.3\.0 /);
  });
});
