// A response body written to disk as it arrives: a temp name in the destination's folder, synced,
// then renamed, so that a reader never sees half a PDF and a 50 MB fax never sits in memory.
import { open } from "node:fs/promises";
import { FaxgateError } from "../errors.js";
import { replaceFile } from "../fs/index.js";

/**
 * Writes `body` to `destPath`; returns the bytes written. Trouble on our side (folder missing,
 * disk full) is a FaxgateError naming the file; trouble reading `body` is rethrown as it came, so
 * that the caller can classify it as a network failure.
 */
export async function streamToFile(body: AsyncIterable<Uint8Array>, destPath: string): Promise<number> {
  const local = (err: unknown) =>
    new FaxgateError(
      "INTERNAL",
      `cannot write the download to ${destPath}: ${(err as NodeJS.ErrnoException).code ?? "error"}`,
      { temporary: true, cause: err },
    );
  return replaceFile(
    destPath,
    async (tmp) => {
      const fh = await open(tmp, "wx", 0o640).catch((err: unknown) => {
        throw local(err);
      });
      try {
        // One awaited write per chunk: backpressure without a pipe.
        for await (const chunk of body) {
          await fh.write(chunk).catch((err: unknown) => {
            throw local(err);
          });
        }
      } finally {
        await fh.close();
      }
    },
    { suffix: ".part", syncDir: false, wrapError: local },
  );
}

/** The file name of a Content-Disposition header (`filename*=UTF-8''...` preferred), or null. */
export function dispositionFileName(header: string | string[] | undefined): string | null {
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return null;
  const star = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(h);
  if (star) {
    try {
      return decodeURIComponent(star[2]!.trim().replace(/^"|"$/g, ""));
    } catch {
      // fall through to the plain form
    }
  }
  const quoted = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(h);
  if (quoted) return quoted[1]!.replace(/\\(.)/g, "$1");
  const plain = /filename\s*=\s*([^;\s]+)/i.exec(h);
  return plain ? plain[1]! : null;
}
