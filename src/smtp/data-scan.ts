// smtp-server looks for the end of a message's data (CRLF "." CRLF) and for dot-stuffed lines by
// testing every byte of every chunk in JavaScript (SMTPStream._feedDataStream): under smtp-source
// (20 sessions, mails of 100 KB) that loop was the receiver's biggest single piece of JavaScript,
// 5% of the main thread's profile, 0.1 ms a mail (docs/bench.md). This puts in its place the same function with the
// loop replaced by a native search for LF "." (Buffer.indexOf), which stops only where a line
// starts with a dot. Everything else is smtp-server 3.21.6's own code, line for line: the
// terminator at the start of the data, the escape dot, the last four bytes kept for the next
// chunk, the pause for the data stream's drain. smtp-server is pinned to that exact version;
// test/smtp/data-scan.test.ts feeds the same data in many chunkings through both functions and
// fails if they ever differ, so an upgrade that changes the original is noticed.
import { SMTPStream } from 'smtp-server/lib/smtp-stream.js';

type Done = (err?: Error | null) => void;

/** The parts of SMTPStream the function reads and writes (its instance fields are untyped insides). */
interface StreamInsides {
  _dataStream: NodeJS.WritableStream & { writable: boolean; destroyed: boolean; write(b: Buffer): boolean };
  _lastBytes: Buffer | false;
  _atDataStart: boolean;
  _countDataBytes(len: number): void;
  _endDataMode(chunk: Buffer | false, remainder: Buffer, done: Done): void;
  _feedDataStream(chunk: Buffer, done: Done): void;
}

const END_SEQUENCE = Buffer.from('\r\n.\r\n');
const DATA_START_END = Buffer.from('.\r\n');
const LF_DOT = Buffer.from('\n.');

/** smtp-server's own _feedDataStream, as it was before installDataScan() (for the test). */
export const originalFeedDataStream = SMTPStream.prototype._feedDataStream;

function feedDataStream(this: StreamInsides, input: Buffer, done: Done): void {
  const dataStream = this._dataStream;
  let chunk = input;
  if (this._lastBytes && this._lastBytes.length) {
    chunk = Buffer.concat([this._lastBytes, chunk], this._lastBytes.length + chunk.length);
    this._lastBytes = false;
  }
  let len = chunk.length;
  // the data is only the terminator (see smtp-server: _atDataStart, not dataBytes)
  if (this._atDataStart && len >= 3 && Buffer.compare(chunk.subarray(0, 3), DATA_START_END) === 0) {
    this._endDataMode(false, chunk.subarray(3), done);
    return;
  }
  // the first line's escape dot
  if (this._atDataStart && len >= 2 && chunk[0] === 0x2e && chunk[1] === 0x2e) {
    chunk = chunk.subarray(1);
    len--;
    this._atDataStart = false;
  }
  // smtp-server's loop looks at each i in 2 .. len-3 for chunk[i-1] = LF and chunk[i] = ".";
  // indexOf finds the same i's (the LF at i-1, from 1 on) without looking at the bytes between
  for (let lf = chunk.indexOf(LF_DOT, 1); lf >= 0 && lf + 1 < len - 2; lf = chunk.indexOf(LF_DOT, lf + 1)) {
    const i = lf + 1;
    if (Buffer.compare(chunk.subarray(i - 2, i + 3), END_SEQUENCE) === 0) {
      const buf = chunk.subarray(0, i);
      this._countDataBytes(buf.length);
      this._endDataMode(buf, chunk.subarray(i + 3), done);
      return;
    }
    if (chunk[i + 1] === 0x2e) {
      const buf = chunk.subarray(0, i);
      this._lastBytes = false;
      this._countDataBytes(buf.length);
      if (dataStream.writable) dataStream.write(buf);
      const rest = chunk.subarray(i + 1);
      setImmediate(() => this._feedDataStream(rest, done));
      return;
    }
  }
  // the last bytes wait for the next chunk (a terminator may straddle the two)
  this._lastBytes = chunk.length < 4 ? chunk : chunk.subarray(chunk.length - 4);
  if (this._lastBytes.length >= chunk.length) return done();
  const buf = chunk.subarray(0, chunk.length - this._lastBytes.length);
  this._countDataBytes(buf.length);
  if (!dataStream.writable) return done();
  const handled = dataStream.write(buf);
  if (handled || dataStream.destroyed) return done();
  const onDrain = (): void => {
    dataStream.removeListener('drain', onDrain);
    dataStream.removeListener('close', onDrain);
    done();
  };
  dataStream.once('drain', onDrain);
  dataStream.once('close', onDrain);
}

let installed = false;

/** Puts feedDataStream in smtp-server's place (once; the SMTP receiver calls it when it is made). */
export function installDataScan(): void {
  if (installed) return;
  installed = true;
  (SMTPStream.prototype as unknown as StreamInsides)._feedDataStream = feedDataStream;
}

/** The fast function, for the test to run beside the original. */
export const fastFeedDataStream = feedDataStream as unknown as typeof originalFeedDataStream;
