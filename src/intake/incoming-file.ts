// A message is written to <data>/incoming/ while it arrives: never held in memory. Bytes past the
// size limit are drained and dropped (the client is told 552 at the end, as SMTP requires). The
// same bytes can feed a second reader as they pass (the MIME parser: one pass over the message);
// the file is what is kept, so a reader that gives up or breaks never stops the file.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fsp, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { FLUSH_ON_CLOSE } from '../fs/atomic.js';

export interface IncomingFile {
  path: string;
  bytes: number;
  /** sha256 hex of what was kept (for duplicate detection of mail without a Message-ID) */
  sha256: string;
  sizeExceeded: boolean;
}

/**
 * A file for one of a message's parts (mail-parse.ts, base64-divert.ts): private, and fsynced as it
 * is closed, while the rest of the message still arrives.
 */
export const partFile = (file: string): WriteStream => createWriteStream(file, { mode: 0o600, flush: FLUSH_ON_CLOSE });

/** The error of a message's stream that closed before its end (stream.pipeline's own code). */
export function prematureClose(what: string): Error {
  return Object.assign(new Error(`${what} closed before its end`), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

/** A fresh private folder for one message and its extracted parts. */
export async function makeWorkDir(incomingDir: string): Promise<string> {
  const dir = path.join(incomingDir, `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`);
  try {
    await fsp.mkdir(dir, { mode: 0o700 });
  } catch (err) {
    // incoming/ itself is made at start; only if it went away is it made again (one call less a message)
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await fsp.mkdir(incomingDir, { recursive: true, mode: 0o750 });
    await fsp.mkdir(dir, { mode: 0o700 });
  }
  return dir;
}

/** Removes a message's work folder: usually already emptied by the store (a plain rmdir), else whole. */
export async function removeWorkDir(dir: string): Promise<void> {
  try {
    await fsp.rmdir(dir);
  } catch {
    await fsp.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * `took` hears of every chunk as it passes (the receiver's garbage bound, src/garbage-bound.ts).
 * The chunks are handed on by hand, not through stream.pipeline and a Transform: for a message
 * of a few chunks those cost more than the chunks themselves (the pipeline's AbortController, the
 * DOMException its end makes, a listener set on each stream), and their objects outlive the young
 * generation, so each message left more for V8's full collections (docs/bench.md). What pipeline
 * promised still holds: an error of either stream, or the client gone before the message's end,
 * destroys both and rejects.
 */
export async function writeIncoming(stream: Readable, file: string, maxBytes: number, tap?: Writable, took?: (bytes: number) => void): Promise<IncomingFile> {
  const hash = createHash('sha256');
  let bytes = 0;
  let total = 0;
  // the tap's own trouble is its reader's to report (it rejects its own result): here it only
  // stops being fed
  let tapOpen = tap !== undefined;
  const closeTap = (): void => {
    tapOpen = false;
  };
  tap?.on('error', closeTap).once('close', closeTap);
  const out = createWriteStream(file, { mode: 0o600 });
  try {
    // Not fsynced here: the store fsyncs it together with the job's other new files and folders
    // (one wait for the disk, not one more before theirs), or reads it into PostgreSQL.
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        stream.off('data', onData);
        stream.destroy();
        out.destroy();
        reject(err);
      };
      // chunks waited on: the file's drain, the reader's drain (or its end)
      let waits = 0;
      const resume = (): void => {
        if (--waits === 0 && !settled) stream.resume();
      };
      const onData = (chunk: Buffer): void => {
        total += chunk.length;
        took?.(chunk.length);
        if (bytes >= maxBytes) {
          // past the limit the message is refused: its reader has nothing more to do
          if (tapOpen) tap!.destroy();
          return;
        }
        const keep = chunk.length + bytes > maxBytes ? chunk.subarray(0, maxBytes - bytes) : chunk;
        bytes += keep.length;
        hash.update(keep);
        if (tapOpen && !tap!.destroyed && !tap!.write(keep)) {
          // the reader is behind: wait for it (backpressure reaches the client's socket), or for its end
          waits += 1;
          const go = (): void => {
            tap!.off('drain', go).off('close', go).off('error', go);
            resume();
          };
          tap!.on('drain', go).on('close', go).on('error', go);
        }
        if (!out.write(keep)) {
          waits += 1;
          out.once('drain', resume);
        }
        if (waits > 0) stream.pause();
      };
      stream.on('data', onData);
      stream.once('end', () => {
        if (tapOpen) tap!.end();
        out.end();
      });
      stream.on('error', fail);
      stream.once('close', () => {
        if (!stream.readableEnded) fail(prematureClose('the message (the client went away)'));
      });
      out.on('error', fail);
      out.once('close', () => {
        if (settled) return;
        if (out.writableFinished) {
          settled = true;
          resolve();
        } else fail(new Error(`${file} was closed before it was written`));
      });
    });
  } catch (err) {
    if (tapOpen) tap!.destroy();
    throw err;
  }
  const exceeded = total > maxBytes || (stream as Readable & { sizeExceeded?: boolean }).sizeExceeded === true;
  return { path: file, bytes, sha256: hash.digest('hex'), sizeExceeded: exceeded };
}
