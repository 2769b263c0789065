// A message is written to <data>/incoming/ while it arrives: never held in memory. Bytes past the
// size limit are drained and dropped (the client is told 552 at the end, as SMTP requires).
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface IncomingFile {
  path: string;
  bytes: number;
  /** sha256 hex of what was kept (for duplicate detection of mail without a Message-ID) */
  sha256: string;
  sizeExceeded: boolean;
}

/** A fresh private folder for one message and its extracted parts. */
export async function makeWorkDir(incomingDir: string): Promise<string> {
  await fsp.mkdir(incomingDir, { recursive: true, mode: 0o750 });
  const dir = path.join(incomingDir, `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`);
  await fsp.mkdir(dir, { mode: 0o700 });
  return dir;
}

export async function writeIncoming(stream: Readable, file: string, maxBytes: number): Promise<IncomingFile> {
  const hash = createHash('sha256');
  let bytes = 0;
  let total = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _enc, done) {
      total += chunk.length;
      if (bytes >= maxBytes) return done();
      const keep = chunk.length + bytes > maxBytes ? chunk.subarray(0, maxBytes - bytes) : chunk;
      bytes += keep.length;
      hash.update(keep);
      done(null, keep);
    },
  });
  await pipeline(stream, limit, createWriteStream(file, { mode: 0o600 }));
  const exceeded = total > maxBytes || (stream as Readable & { sizeExceeded?: boolean }).sizeExceeded === true;
  return { path: file, bytes, sha256: hash.digest('hex'), sizeExceeded: exceeded };
}
